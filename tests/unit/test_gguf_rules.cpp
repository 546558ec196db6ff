// The GGUF rules that the malformed corpus does not cover, each on a small file built here byte by byte.
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <string>

#include "test_gguf_builder.hpp"
#include "test_gguf_refusal.hpp"

using namespace tensorfs;
using test::GgufBuilder;
using test::kF32;

namespace {

constexpr std::uint32_t kQ4_0 = 2;
constexpr std::uint32_t kQ8_K = 15;

std::vector<std::uint8_t> zeros(std::size_t count) { return std::vector<std::uint8_t>(count, 0); }

// A header of one KV and one F32 tensor of 8 elements, with its 32 data bytes.
GgufBuilder one_tensor_file() {
    return GgufBuilder().kv_string("general.architecture", "test").tensor("w", {8}, kF32, 0).data(zeros(32));
}

// An array value: element type, count, then the elements' bytes as given.
std::vector<std::uint8_t> array_value(std::uint32_t element_type, std::uint64_t count,
                                      const std::vector<std::uint8_t>& elements) {
    std::vector<std::uint8_t> out;
    GgufBuilder::put(out, element_type);
    GgufBuilder::put(out, count);
    out.insert(out.end(), elements.begin(), elements.end());
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gguf_rules)

BOOST_AUTO_TEST_CASE(version_2_and_3_accepted) {
    test::TempFolder folder;
    for (const std::uint32_t version : {2u, 3u}) {
        auto builder = GgufBuilder(version).kv_string("general.architecture", "test");
        builder.tensor("w", {8, 2}, kF32, 0).data(zeros(64));
        const auto path = folder.write("v" + std::to_string(version) + ".gguf", builder.bytes());
        const Catalog catalog = open_catalog(path);
        BOOST_REQUIRE_EQUAL(catalog.tensors.size(), 1u);
        const auto& tensor = catalog.tensors[0];
        BOOST_CHECK_EQUAL(tensor.name, "w");
        BOOST_CHECK_EQUAL(tensor.type->name, "F32");
        BOOST_CHECK((tensor.shape == std::vector<std::uint64_t>{2, 8}));  // ne reversed
        BOOST_CHECK_EQUAL(tensor.elements, 16u);
        BOOST_CHECK_EQUAL(tensor.nbytes, 64u);
        BOOST_CHECK_EQUAL(tensor.offset % 32, 0u);
        BOOST_CHECK_EQUAL(tensor.offset + 64, std::filesystem::file_size(path));
        BOOST_CHECK_EQUAL(catalog.files[0].display, path.filename().string());
        BOOST_CHECK_EQUAL(catalog.files[0].path, path.string());
    }
}

BOOST_AUTO_TEST_CASE(other_versions_refused) {
    test::TempFolder folder;
    auto bytes = one_tensor_file().bytes();
    const auto with_version = [&](std::uint32_t version) {
        std::memcpy(bytes.data() + 4, &version, 4);
        return folder.write("v.gguf", bytes);
    };
    test::expect_gguf_refused(with_version(0), "GGUF version 0 is not supported", 4);
    test::expect_gguf_refused(with_version(0x03000000), "looks like a big-endian file", 4);
}

BOOST_AUTO_TEST_CASE(every_value_type_and_bytes_kept_exactly) {
    test::TempFolder folder;
    const std::string not_utf8 = "ok \xC3\x28 \xFF end";
    std::vector<std::uint8_t> strings;
    GgufBuilder::put_string(strings, "a");
    GgufBuilder::put_string(strings, not_utf8);
    auto builder = GgufBuilder()
                       .kv("u8", test::kGgufUint8, {200})
                       .kv("i8", test::kGgufInt8, {0x9C})
                       .kv("bool", test::kGgufBool, {2})  // any non-zero byte is true, as ggml reads it
                       .kv("u64", test::kGgufUint64, GgufBuilder::bytes_of(UINT64_MAX))
                       .kv("i64", test::kGgufInt64, GgufBuilder::bytes_of(INT64_MIN))
                       .kv("f32", test::kGgufFloat32, GgufBuilder::bytes_of(0.1f))
                       .kv_string("bad utf8", not_utf8)
                       .kv("strings", test::kGgufArray, array_value(test::kGgufString, 2, strings))
                       .kv("empty", test::kGgufArray, array_value(test::kGgufFloat64, 0, {}));
    const Catalog catalog = open_catalog(folder.write("values.gguf", builder.bytes()));
    const auto& m = catalog.metadata;
    BOOST_CHECK_EQUAL(m["u8"].get<std::uint64_t>(), 200u);
    BOOST_CHECK_EQUAL(m["i8"].get<std::int64_t>(), -100);
    BOOST_CHECK(m["bool"].is_boolean() && m["bool"].get<bool>());
    BOOST_CHECK(m["u64"].is_number_unsigned() && m["u64"].get<std::uint64_t>() == UINT64_MAX);
    BOOST_CHECK(m["i64"].get<std::int64_t>() == INT64_MIN);
    BOOST_CHECK_EQUAL(static_cast<float>(m["f32"].get<double>()), 0.1f);
    BOOST_CHECK(m["bad utf8"].get<std::string>() == not_utf8);
    BOOST_CHECK(m["strings"][1].get<std::string>() == not_utf8);
    BOOST_CHECK(m["empty"].is_array() && m["empty"].empty());
    const auto& t = catalog.metadata_types;
    BOOST_CHECK_EQUAL(t["u8"], "UINT8");
    BOOST_CHECK_EQUAL(t["bool"], "BOOL");
    BOOST_CHECK_EQUAL(t["bad utf8"], "STRING");
    BOOST_CHECK_EQUAL(t["strings"], "ARRAY[STRING]");
    BOOST_CHECK_EQUAL(t["empty"], "ARRAY[FLOAT64]");
    // How model.json shows bytes that are not UTF-8: dumped with error_handler_t::replace, as U+FFFD.
    BOOST_CHECK_THROW(m.dump(), nlohmann::json::type_error);
    const std::string shown = m["bad utf8"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    BOOST_CHECK_EQUAL(shown, "\"ok \xEF\xBF\xBD( \xEF\xBF\xBD end\"");
}

BOOST_AUTO_TEST_CASE(nested_array_refused) {
    test::TempFolder folder;
    const auto inner = array_value(test::kGgufUint8, 1, {7});
    const auto builder = GgufBuilder().kv("nest", test::kGgufArray, array_value(test::kGgufArray, 1, inner));
    test::expect_gguf_refused(folder.write("nested.gguf", builder.bytes()),
                              "key 'nest' holds an array of arrays; GGUF does not allow nested arrays");
}

BOOST_AUTO_TEST_CASE(unknown_value_type_refused) {
    test::TempFolder folder;
    const auto builder = GgufBuilder().kv("odd", 13, {0, 0, 0, 0});
    test::expect_gguf_refused(folder.write("odd.gguf", builder.bytes()), "key 'odd' has unknown value type 13");
}

BOOST_AUTO_TEST_CASE(array_longer_than_the_file_refused) {
    test::TempFolder folder;
    const auto builder = GgufBuilder().kv("many", test::kGgufArray, array_value(test::kGgufString, 1u << 20, {}));
    test::expect_gguf_refused(folder.write("many.gguf", builder.bytes()), "key 'many' claims 1048576 STRING elements");
}

BOOST_AUTO_TEST_CASE(duplicate_and_empty_keys_refused) {
    test::TempFolder folder;
    const auto builder = GgufBuilder().kv_u32("a", 1).kv_u32("b", 2).kv_u32("a", 3).kv_u32("", 4);
    const auto path = folder.write("keys.gguf", builder.bytes());
    // The second 'a' starts after the header (24 bytes) and two pairs of 8 + 1 + 4 + 4 bytes.
    test::expect_gguf_refused(path, "duplicate metadata key 'a'", 24 + 2 * 17);
    test::expect_gguf_refused(path, "metadata key 3 is empty");
    // A problem found before the one that stops the reading is still reported.
    const auto inner = array_value(test::kGgufUint8, 1, {7});
    const auto then_stop = GgufBuilder().kv_u32("a", 1).kv_u32("a", 2).kv("nest", test::kGgufArray,
                                                                          array_value(test::kGgufArray, 1, inner));
    const auto both = folder.write("both.gguf", then_stop.bytes());
    test::expect_gguf_refused(both, "duplicate metadata key 'a'");
    test::expect_gguf_refused(both, "does not allow nested arrays");
}

BOOST_AUTO_TEST_CASE(duplicate_and_empty_tensor_names_refused) {
    test::TempFolder folder;
    auto builder = GgufBuilder().tensor("w", {8}, kF32, 0).tensor("w", {8}, kF32, 32).tensor("", {8}, kF32, 64);
    const auto path = folder.write("names.gguf", builder.data(zeros(96)).bytes());
    test::expect_gguf_refused(path, "duplicate tensor name 'w' (tensors 0 and 1)");
    test::expect_gguf_refused(path, "tensor 2 has an empty name");
}

BOOST_AUTO_TEST_CASE(negative_dimension_refused) {
    test::TempFolder folder;
    const auto builder = GgufBuilder().tensor("neg", {8, -2}, kF32, 0).data(zeros(64));
    test::expect_gguf_refused(folder.write("neg.gguf", builder.bytes()),
                              "tensor 'neg' has a negative size in dimension 1");
}

// 2^32 x 2^32 elements wrap a 64-bit count around to exactly 0.
BOOST_AUTO_TEST_CASE(element_count_wrapping_to_zero_refused) {
    test::TempFolder folder;
    const std::int64_t big = std::int64_t{1} << 32;
    const auto builder = GgufBuilder().tensor("wrap", {big, big}, kF32, 0);
    test::expect_gguf_refused(folder.write("wrap.gguf", builder.bytes()), "tensor 'wrap' has too many elements");
    // Also when another dimension is 0: the sizes themselves are impossible.
    const auto with_zero = GgufBuilder().tensor("wrap0", {big, big, 0}, kF32, 0);
    test::expect_gguf_refused(folder.write("wrap0.gguf", with_zero.bytes()), "tensor 'wrap0' has too many elements");
}

// 2^62 F32 elements are 2^64 bytes: the byte size wraps around to exactly 0.
BOOST_AUTO_TEST_CASE(byte_size_wrapping_to_zero_refused) {
    test::TempFolder folder;
    const auto builder = GgufBuilder().tensor("huge", {std::int64_t{1} << 62}, kF32, 0);
    test::expect_gguf_refused(folder.write("huge.gguf", builder.bytes()),
                              "tensor 'huge' with ne [4611686018427387904] has a byte size that overflows");
}

BOOST_AUTO_TEST_CASE(zero_element_and_scalar_tensors_accepted) {
    test::TempFolder folder;
    auto builder = GgufBuilder().tensor("empty", {32, 0}, kQ4_0, 0).tensor("scalar", {}, kF32, 0);
    const Catalog catalog = open_catalog(folder.write("small.gguf", builder.data(zeros(4)).bytes()));
    BOOST_REQUIRE_EQUAL(catalog.tensors.size(), 2u);
    BOOST_CHECK((catalog.tensors[0].shape == std::vector<std::uint64_t>{0, 32}));
    BOOST_CHECK_EQUAL(catalog.tensors[0].elements, 0u);
    BOOST_CHECK_EQUAL(catalog.tensors[0].nbytes, 0u);
    BOOST_CHECK(catalog.tensors[1].shape.empty());
    BOOST_CHECK_EQUAL(catalog.tensors[1].elements, 1u);
    BOOST_CHECK_EQUAL(catalog.tensors[1].nbytes, 4u);
}

BOOST_AUTO_TEST_CASE(type_without_dequant_accepted_retired_id_refused) {
    test::TempFolder folder;
    const auto q8k = GgufBuilder().tensor("q8k", {256}, kQ8_K, 0).data(zeros(292));
    const Catalog catalog = open_catalog(folder.write("q8k.gguf", q8k.bytes()));
    BOOST_CHECK_EQUAL(catalog.tensors.at(0).type->name, "Q8_K");
    BOOST_CHECK_EQUAL(catalog.tensors.at(0).nbytes, 292u);
    const auto retired = GgufBuilder().tensor("q4_2", {32}, 4, 0).data(zeros(32));
    test::expect_gguf_refused(folder.write("q4_2.gguf", retired.bytes()), "tensor 'q4_2' has unknown ggml type id 4");
}

BOOST_AUTO_TEST_CASE(overlapping_or_reordered_data_refused_gaps_accepted) {
    test::TempFolder folder;
    const auto overlap = GgufBuilder().tensor("a", {16}, kF32, 0).tensor("b", {8}, kF32, 32).data(zeros(64));
    test::expect_gguf_refused(folder.write("overlap.gguf", overlap.bytes()),
                              "tensor 'b' data at offset 32 of the data section overlaps the tensor before it");
    const auto reordered = GgufBuilder().tensor("a", {8}, kF32, 32).tensor("b", {8}, kF32, 0).data(zeros(64));
    test::expect_gguf_refused(folder.write("reordered.gguf", reordered.bytes()),
                              "tensor 'b' data at offset 0 of the data section overlaps the tensor before it");
    const auto gap = GgufBuilder().tensor("a", {8}, kF32, 0).tensor("b", {8}, kF32, 64).data(zeros(96));
    const Catalog catalog = open_catalog(folder.write("gap.gguf", gap.bytes()));
    BOOST_CHECK_EQUAL(catalog.tensors.at(1).offset - catalog.tensors.at(0).offset, 64u);
}

BOOST_AUTO_TEST_CASE(alignment_key_rules) {
    test::TempFolder folder;
    const auto wrong_type = GgufBuilder().kv("general.alignment", test::kGgufUint64, GgufBuilder::bytes_of(std::uint64_t{64}));
    test::expect_gguf_refused(folder.write("a64.gguf", wrong_type.bytes()),
                              "general.alignment must be of type UINT32 but is UINT64", 24 + 8 + 17);
    // A valid alignment places the data section and checks the offsets with it.
    auto builder = GgufBuilder(3, 256).kv_u32("general.alignment", 256).tensor("w", {8}, kF32, 0);
    const Catalog catalog = open_catalog(folder.write("a256.gguf", builder.data(zeros(32)).bytes()));
    BOOST_CHECK_EQUAL(catalog.tensors.at(0).offset, 256u);
    auto misaligned = GgufBuilder(3, 256).kv_u32("general.alignment", 256).tensor("w", {8}, kF32, 32);
    test::expect_gguf_refused(folder.write("m256.gguf", misaligned.data(zeros(64)).bytes()),
                              "tensor 'w' has data offset 32, not a multiple of the alignment 256");
}

BOOST_AUTO_TEST_CASE(truncated_header_and_missing_data_section_refused) {
    test::TempFolder folder;
    auto bytes = one_tensor_file().bytes();
    bytes.resize(80);  // inside the tensor info, which starts at byte 68
    test::expect_gguf_refused(folder.write("cut.gguf", bytes), "file ends inside", std::nullopt);
    // A header whose padding to the data section is cut off, with a tensor that has no bytes.
    auto header = GgufBuilder().tensor("none", {0}, kF32, 0).bytes();
    header.resize(24 + 8 + 4 + 4 + 8 + 4 + 8);
    test::expect_gguf_refused(folder.write("nodata.gguf", header), "the data section would start at byte 64");
}

BOOST_AUTO_TEST_SUITE_END()
