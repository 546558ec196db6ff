// Access to the reference vectors in tests/data/vectors (made with ggml itself; see its README.md).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

namespace tensorfs::test {

inline std::string data_path(const std::string& relative) { return std::string(TENSORFS_TEST_DATA) + "/" + relative; }
inline std::string vectors_path(const std::string& relative) { return data_path("vectors/" + relative); }

inline std::vector<std::uint8_t> read_bytes(const std::string& path, std::uint64_t offset = 0,
                                            std::uint64_t length = UINT64_MAX) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    in.seekg(0, std::ios::end);
    const std::uint64_t size = static_cast<std::uint64_t>(in.tellg());
    if (offset > size) throw std::runtime_error("offset past end of " + path);
    if (length == UINT64_MAX || offset + length > size) length = size - offset;
    std::vector<std::uint8_t> bytes(length);
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(length));
    return bytes;
}

inline std::vector<float> read_f32_file(const std::string& path) {
    const auto bytes = read_bytes(path);
    std::vector<float> values(bytes.size() / 4);
    if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * 4);
    return values;
}

inline const nlohmann::json& manifest() {
    static const nlohmann::json parsed = [] {
        std::ifstream in(vectors_path("manifest.json"));
        return nlohmann::json::parse(in);
    }();
    return parsed;
}

// One GGUF tensor of the vectors with where its bytes are and what ggml decodes them to.
struct GgufVector {
    std::string file;      // path of the .gguf file
    std::string name;
    std::string ggml_type; // ggml's lower-case name, e.g. "q4_K"
    std::uint32_t type_id;
    std::uint64_t elements;
    std::uint64_t offset;  // absolute
    std::uint64_t nbytes;
    std::string expected;  // path of the expected .f32 file
};

// Every tensor of every unsplit GGUF file in the manifest (mixed, align64, tiny-llama).
inline std::vector<GgufVector> gguf_vectors() {
    std::vector<GgufVector> all;
    for (const auto& file : manifest()["gguf"]) {
        const std::string path = file["file"];
        if (path.find("split/") != std::string::npos) continue;
        for (const auto& t : file["tensors"]) {
            all.push_back(GgufVector{vectors_path(path), t["name"], t["ggml_type"], t["ggml_type_id"],
                                     t["nelements"], t["data_offset"], t["raw_nbytes"],
                                     vectors_path(t["expected_f32"])});
        }
    }
    return all;
}

// Bit-exact comparison, except that any NaN matches any NaN (the vectors' README: compare NaN positions).
inline void check_same_floats(const std::vector<float>& expected, const float* actual, std::size_t count,
                              const std::string& what) {
    BOOST_REQUIRE_MESSAGE(expected.size() == count, what << ": " << count << " values, expected " << expected.size());
    std::size_t mismatches = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < count; ++i) {
        std::uint32_t a, b;
        std::memcpy(&a, &expected[i], 4);
        std::memcpy(&b, &actual[i], 4);
        const bool same = a == b || (std::isnan(expected[i]) && std::isnan(actual[i]));
        if (!same && mismatches++ == 0) first = i;
    }
    BOOST_CHECK_MESSAGE(mismatches == 0, what << ": " << mismatches << " values differ, first at " << first
                                              << " (expected " << (count ? expected[first] : 0.f) << ", got "
                                              << (count ? actual[first] : 0.f) << ")");
}

}  // namespace tensorfs::test
