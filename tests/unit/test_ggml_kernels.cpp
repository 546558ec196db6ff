// Every GGUF tensor of the vectors whose type has a kernel in the type table, decoded with the portable
// kernel and compared bit for bit with what ggml's own to_float produced.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "tensorfs/dtype.hpp"
#include "vectors.hpp"

using namespace tensorfs;

namespace {

// A vector tensor together with the table row that decodes it and its whole-block count.
struct Decodable {
    test::GgufVector vector;
    const TypeTraits* type;
    std::uint64_t nblocks;
};

// The tensors whose type the table can dequantize, after checking that the table's geometry agrees with
// the stored sizes (a wrong block size would make every later comparison meaningless).
std::vector<Decodable> decodable_vectors() {
    std::vector<Decodable> all;
    for (const auto& v : test::gguf_vectors()) {
        const TypeTraits* type = ggml_type_by_id(v.type_id);
        if (type == nullptr || !type->has_dequant()) continue;
        BOOST_TEST_CONTEXT(v.name << " (" << type->name << ")") {
            BOOST_REQUIRE(v.elements % type->block_elements == 0);
            const std::uint64_t nblocks = v.elements / type->block_elements;
            BOOST_REQUIRE_EQUAL(v.nbytes, nblocks * type->block_bytes);
            all.push_back({v, type, nblocks});
        }
    }
    return all;
}

std::string upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
    return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ggml_kernels)

BOOST_AUTO_TEST_CASE(table_rows_match_the_vectors_type_names) {
    for (const auto& v : test::gguf_vectors()) {
        const TypeTraits* type = ggml_type_by_id(v.type_id);
        if (type == nullptr) continue;
        BOOST_CHECK_MESSAGE(type->name == upper(v.ggml_type),
                            "id " << v.type_id << " is " << type->name << " in the table, ggml calls it " << v.ggml_type);
    }
}

BOOST_AUTO_TEST_CASE(whole_tensors_decode_like_ggml) {
    std::map<std::string, int> tensors_per_type;
    for (const auto& [v, type, nblocks] : decodable_vectors()) {
        const auto raw = test::read_bytes(v.file, v.offset, v.nbytes);
        std::vector<float> out(v.elements);
        type->portable(raw.data(), nblocks, out.data());
        test::check_same_floats(test::read_f32_file(v.expected), out.data(), out.size(),
                                v.name + " (" + std::string(type->name) + ")");
        ++tensors_per_type[std::string(type->name)];
    }
    for (const auto& [name, count] : tensors_per_type) BOOST_TEST_MESSAGE(name << ": " << count << " tensor(s) checked");
    BOOST_TEST(!tensors_per_type.empty());
}

// Kernels must decode any run of whole blocks from any address: decode the first half of the blocks and
// then the rest as two calls, from a copy of the bytes placed one byte past an aligned start.
BOOST_AUTO_TEST_CASE(split_runs_of_blocks_decode_like_ggml) {
    for (const auto& [v, type, nblocks] : decodable_vectors()) {
        const auto raw = test::read_bytes(v.file, v.offset, v.nbytes);
        std::vector<std::uint8_t> shifted(raw.size() + 1);
        std::copy(raw.begin(), raw.end(), shifted.begin() + 1);
        const std::uint8_t* src = shifted.data() + 1;

        const std::uint64_t first = nblocks / 2;
        std::vector<float> out(v.elements);
        type->portable(src, first, out.data());
        type->portable(src + first * type->block_bytes, nblocks - first, out.data() + first * type->block_elements);
        test::check_same_floats(test::read_f32_file(v.expected), out.data(), out.size(),
                                v.name + " (" + std::string(type->name) + ") in two runs split at block " +
                                    std::to_string(first));
    }
}

// Every type the table can dequantize is exercised by at least one tensor of the vectors.
BOOST_AUTO_TEST_CASE(every_dequantizable_type_has_a_vector) {
    const auto vectors = test::gguf_vectors();
    for (std::uint32_t id = 0; id < 256; ++id) {
        const TypeTraits* type = ggml_type_by_id(id);
        if (type == nullptr || !type->has_dequant()) continue;
        const bool covered =
            std::any_of(vectors.begin(), vectors.end(), [id](const test::GgufVector& v) { return v.type_id == id; });
        BOOST_CHECK_MESSAGE(covered, type->name << " has a kernel but no tensor in the vectors");
    }
}

BOOST_AUTO_TEST_SUITE_END()
