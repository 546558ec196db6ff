// The GGUF parser against the reference vectors: every tensor info and every key/value pair that manifest.json
// records (checked there against gguf-py), and the split parts against the unsplit model.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "tensorfs/catalog.hpp"
#include "tensorfs/open_source.hpp"
#include "vectors.hpp"

using namespace tensorfs;
using nlohmann::ordered_json;

namespace {

const nlohmann::json& manifest_entry(const std::string& file) {
    for (const auto& entry : test::manifest()["gguf"]) {
        if (entry["file"] == file) return entry;
    }
    throw std::runtime_error("no manifest entry for " + file);
}

std::uint64_t hex_bits(const nlohmann::json& text) { return std::stoull(text.get<std::string>(), nullptr, 16); }

std::string hex_bytes(const std::string& bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (const char c : bytes) {
        out += kHex[static_cast<unsigned char>(c) >> 4];
        out += kHex[static_cast<unsigned char>(c) & 0xF];
    }
    return out;
}

// One scalar value as the parser gave it against the manifest's value (and bit pattern, for floats).
void check_scalar(const ordered_json& actual, const std::string& type, const nlohmann::json& expected,
                  const nlohmann::json* bits, const std::string& what) {
    if (type == "FLOAT32") {
        BOOST_REQUIRE_MESSAGE(actual.is_number_float(), what);
        const double wide = actual.get<double>();
        const auto narrow = static_cast<float>(wide);
        BOOST_CHECK_MESSAGE(static_cast<double>(narrow) == wide || std::isnan(wide), what << ": not a float32 value");
        std::uint32_t got;
        std::memcpy(&got, &narrow, 4);
        BOOST_CHECK_MESSAGE(got == hex_bits(*bits), what << ": bits " << std::hex << got);
    } else if (type == "FLOAT64") {
        BOOST_REQUIRE_MESSAGE(actual.is_number_float(), what);
        const double value = actual.get<double>();
        std::uint64_t got;
        std::memcpy(&got, &value, 8);
        BOOST_CHECK_MESSAGE(got == hex_bits(*bits), what << ": bits " << std::hex << got);
    } else if (type == "STRING") {
        BOOST_REQUIRE_MESSAGE(actual.is_string(), what);
        BOOST_CHECK_MESSAGE(actual.get<std::string>() == expected.get<std::string>(), what);
    } else if (type == "BOOL") {
        BOOST_CHECK_MESSAGE(actual.is_boolean() && actual.get<bool>() == expected.get<bool>(), what);
    } else if (type.starts_with("UINT")) {
        BOOST_CHECK_MESSAGE(actual.is_number_unsigned() && actual.get<std::uint64_t>() == expected.get<std::uint64_t>(),
                            what << ": " << actual.dump() << " != " << expected.dump());
    } else {
        BOOST_REQUIRE_MESSAGE(type.starts_with("INT"), what << ": unexpected type " << type);
        BOOST_CHECK_MESSAGE(actual.is_number_integer() && !actual.is_number_unsigned() &&
                                actual.get<std::int64_t>() == expected.get<std::int64_t>(),
                            what << ": " << actual.dump() << " != " << expected.dump());
    }
}

void check_metadata(const Catalog& catalog, const nlohmann::json& entry) {
    const auto& kvs = entry["metadata"];
    BOOST_CHECK_EQUAL(catalog.metadata.size(), kvs.size());
    BOOST_CHECK_EQUAL(catalog.metadata_types.size(), kvs.size());
    auto in_file_order = catalog.metadata.begin();
    for (const auto& kv : kvs) {
        const std::string key = kv["key"];
        const std::string type = kv["type"];
        BOOST_REQUIRE_MESSAGE(catalog.metadata.contains(key), "missing key " << key);
        // In file order.
        BOOST_CHECK_EQUAL((in_file_order++).key(), key);
        const auto& value = catalog.metadata[key];
        if (type != "ARRAY") {
            BOOST_CHECK_EQUAL(catalog.metadata_types[key].get<std::string>(), type);
            check_scalar(value, type, kv["value"], kv.contains("bits") ? &kv["bits"] : nullptr, key);
            if (kv.contains("utf8_hex")) BOOST_CHECK_EQUAL(hex_bytes(value.get<std::string>()), kv["utf8_hex"]);
            continue;
        }
        const std::string element_type = kv["elem_type"];
        BOOST_CHECK_EQUAL(catalog.metadata_types[key].get<std::string>(), "ARRAY[" + element_type + "]");
        BOOST_REQUIRE_MESSAGE(value.is_array(), key);
        BOOST_REQUIRE_EQUAL(value.size(), kv["count"].get<std::size_t>());
        for (std::size_t i = 0; i < value.size(); ++i) {
            check_scalar(value[i], element_type, kv["value"][i], kv.contains("bits") ? &kv["bits"][i] : nullptr,
                         key + "[" + std::to_string(i) + "]");
        }
    }
}

void check_tensors(const Catalog& catalog, const nlohmann::json& entry, std::uint32_t file_index) {
    const auto& expected = entry["tensors"];
    std::size_t checked = 0;
    for (const auto& want : expected) {
        const std::string name = want["name"];
        const Tensor* found = nullptr;
        for (const auto& tensor : catalog.tensors) {
            if (tensor.name == name) found = &tensor;
        }
        BOOST_REQUIRE_MESSAGE(found != nullptr, "missing tensor " << name);
        BOOST_REQUIRE_MESSAGE(found->type != nullptr, name);
        BOOST_CHECK_EQUAL(found->type->ggml_id, want["ggml_type_id"].get<int>());
        const auto shape = want["numpy_shape"].get<std::vector<std::uint64_t>>();
        BOOST_CHECK_MESSAGE(found->shape == shape, name << ": shape");
        BOOST_CHECK_EQUAL(found->elements, want["nelements"].get<std::uint64_t>());
        BOOST_CHECK_EQUAL(found->nbytes, want["raw_nbytes"].get<std::uint64_t>());
        BOOST_CHECK_EQUAL(found->offset, want["data_offset"].get<std::uint64_t>());
        BOOST_CHECK_EQUAL(found->file, file_index);
        ++checked;
    }
    BOOST_CHECK_EQUAL(checked, entry["n_tensors"].get<std::size_t>());
}

void check_unsplit_file(const std::string& relative) {
    const auto& entry = manifest_entry(relative);
    const Catalog catalog = open_catalog(test::vectors_path(relative));
    BOOST_CHECK_EQUAL(catalog.format, "gguf");
    BOOST_REQUIRE_EQUAL(catalog.files.size(), 1u);
    BOOST_CHECK_EQUAL(catalog.files[0].display, std::filesystem::path(relative).filename().string());
    BOOST_CHECK_EQUAL(catalog.files[0].size, entry["file_size"].get<std::uint64_t>());
    BOOST_CHECK_EQUAL(catalog.tensors.size(), entry["n_tensors"].get<std::size_t>());
    // In file order: the manifest lists the tensors as the file does.
    for (std::size_t i = 0; i < catalog.tensors.size(); ++i) {
        BOOST_CHECK_EQUAL(catalog.tensors[i].name, entry["tensors"][i]["name"].get<std::string>());
    }
    check_tensors(catalog, entry, 0);
    check_metadata(catalog, entry);
}

const char* const kSplitParts[] = {
    "gguf/split/tiny-llama-Q4_K_M-00001-of-00003.gguf",
    "gguf/split/tiny-llama-Q4_K_M-00002-of-00003.gguf",
    "gguf/split/tiny-llama-Q4_K_M-00003-of-00003.gguf",
};

}  // namespace

BOOST_AUTO_TEST_SUITE(gguf_vectors)

BOOST_AUTO_TEST_CASE(mixed) { check_unsplit_file("gguf/mixed.gguf"); }

BOOST_AUTO_TEST_CASE(align64) { check_unsplit_file("gguf/align64.gguf"); }

BOOST_AUTO_TEST_CASE(tiny_llama) { check_unsplit_file("gguf/tiny-llama-Q4_K_M.gguf"); }

// Any part opens the whole set: the files in order, each part's tensors as the manifest records them, and the
// first part's metadata (split keys included).
BOOST_AUTO_TEST_CASE(split_any_part_opens_all_parts) {
    for (const char* given : kSplitParts) {
        BOOST_TEST_CONTEXT("given " << given) {
            const Catalog catalog = open_catalog(test::vectors_path(given));
            BOOST_REQUIRE_EQUAL(catalog.files.size(), 3u);
            for (std::uint32_t part = 0; part < 3; ++part) {
                const auto& entry = manifest_entry(kSplitParts[part]);
                BOOST_CHECK_EQUAL(catalog.files[part].display,
                                  std::filesystem::path(kSplitParts[part]).filename().string());
                BOOST_CHECK_EQUAL(catalog.files[part].size, entry["file_size"].get<std::uint64_t>());
                check_tensors(catalog, entry, part);
            }
            check_metadata(catalog, manifest_entry(kSplitParts[0]));
        }
    }
}

// The split set is the unsplit model: same tensors in the same order, same types and shapes, same stored bytes.
BOOST_AUTO_TEST_CASE(split_equals_unsplit) {
    const Catalog whole = open_catalog(test::vectors_path("gguf/tiny-llama-Q4_K_M.gguf"));
    const Catalog split = open_catalog(test::vectors_path(kSplitParts[1]));
    BOOST_REQUIRE_EQUAL(split.tensors.size(), whole.tensors.size());
    for (std::size_t i = 0; i < whole.tensors.size(); ++i) {
        const auto& a = whole.tensors[i];
        const auto& b = split.tensors[i];
        BOOST_TEST_CONTEXT(a.name) {
            BOOST_CHECK_EQUAL(a.name, b.name);
            BOOST_CHECK_EQUAL(a.type, b.type);
            BOOST_CHECK(a.shape == b.shape);
            BOOST_CHECK_EQUAL(a.elements, b.elements);
            BOOST_REQUIRE_EQUAL(a.nbytes, b.nbytes);
            const auto bytes_a = test::read_bytes(whole.files[a.file].path, a.offset, a.nbytes);
            const auto bytes_b = test::read_bytes(split.files[b.file].path, b.offset, b.nbytes);
            BOOST_CHECK(bytes_a == bytes_b);
        }
    }
    // Every key of the unsplit model, with the same value; the split keys come on top.
    for (const auto& [key, value] : whole.metadata.items()) {
        BOOST_CHECK_MESSAGE(split.metadata.contains(key) && split.metadata[key] == value, key);
    }
    BOOST_CHECK_EQUAL(split.metadata.size(), whole.metadata.size() + 3);
    BOOST_CHECK_EQUAL(split.metadata_types["split.count"], "UINT16");
    BOOST_CHECK_EQUAL(split.metadata_types["split.tensors.count"], "INT32");
}

BOOST_AUTO_TEST_SUITE_END()
