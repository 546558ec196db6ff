// Split GGUF models: names, assembly of the parts, and refusal of sets with a missing or foreign part.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>

#include "format/gguf_split.hpp"
#include "test_gguf_builder.hpp"
#include "test_gguf_refusal.hpp"
#include "vectors.hpp"

using namespace tensorfs;
using test::GgufBuilder;
using test::kF32;

namespace {

// Part `no` (from 0) of a set of `count`, holding one F32 tensor of 8 elements named `tensor`.
std::vector<std::uint8_t> part_bytes(std::uint16_t no, std::uint16_t count, std::int32_t tensors_count,
                                     const std::string& tensor) {
    auto builder = GgufBuilder();
    if (no == 0) builder.kv_string("general.architecture", "test");
    builder.split(no, count, tensors_count).tensor(tensor, {8}, kF32, 0);
    return builder.data(std::vector<std::uint8_t>(32, static_cast<std::uint8_t>(no + 1))).bytes();
}

std::string part_name(std::uint64_t part, std::uint64_t count) { return gguf::split_file_name("m", part, count); }

}  // namespace

BOOST_AUTO_TEST_SUITE(gguf_split)

BOOST_AUTO_TEST_CASE(names) {
    const auto name = gguf::parse_split_name("tiny-llama-Q4_K_M-00002-of-00003.gguf");
    BOOST_REQUIRE(name);
    BOOST_CHECK_EQUAL(name->prefix, "tiny-llama-Q4_K_M");
    BOOST_CHECK_EQUAL(name->part, 2u);
    BOOST_CHECK_EQUAL(name->count, 3u);
    BOOST_CHECK_EQUAL(gguf::split_file_name("x", 7, 123456), "x-00007-of-123456.gguf");
    BOOST_CHECK(!gguf::parse_split_name("model.gguf"));
    BOOST_CHECK(!gguf::parse_split_name("m-1-of-2.gguf"));
    BOOST_CHECK(!gguf::parse_split_name("-00001-of-00002.gguf"));
    BOOST_CHECK(!gguf::parse_split_name("m-00001-of-00002.gguf.part"));
}

BOOST_AUTO_TEST_CASE(any_part_mounts_the_set_in_order) {
    test::TempFolder folder;
    folder.write(part_name(1, 2), part_bytes(0, 2, 2, "a"));
    folder.write(part_name(2, 2), part_bytes(1, 2, 2, "b"));
    for (const std::uint64_t given : {1u, 2u}) {
        const Catalog catalog = open_catalog(folder.path() / part_name(given, 2));
        BOOST_REQUIRE_EQUAL(catalog.files.size(), 2u);
        BOOST_CHECK_EQUAL(catalog.files[0].display, part_name(1, 2));
        BOOST_CHECK_EQUAL(catalog.files[1].display, part_name(2, 2));
        BOOST_CHECK_EQUAL(catalog.files[1].path, (folder.path() / part_name(2, 2)).string());
        BOOST_REQUIRE_EQUAL(catalog.tensors.size(), 2u);
        BOOST_CHECK_EQUAL(catalog.tensors[0].name, "a");
        BOOST_CHECK_EQUAL(catalog.tensors[0].file, 0u);
        BOOST_CHECK_EQUAL(catalog.tensors[1].name, "b");
        BOOST_CHECK_EQUAL(catalog.tensors[1].file, 1u);
        const auto bytes = test::read_bytes(catalog.files[1].path, catalog.tensors[1].offset, 32);
        BOOST_CHECK(bytes == std::vector<std::uint8_t>(32, 2));
        // The first part's metadata, split keys kept.
        BOOST_CHECK_EQUAL(catalog.metadata["general.architecture"], "test");
        BOOST_CHECK_EQUAL(catalog.metadata["split.count"], 2);
    }
}

BOOST_AUTO_TEST_CASE(split_count_of_one_is_a_plain_file) {
    test::TempFolder folder;
    const Catalog catalog = open_catalog(folder.write(part_name(1, 1), part_bytes(0, 1, 1, "a")));
    BOOST_CHECK_EQUAL(catalog.files.size(), 1u);
}

BOOST_AUTO_TEST_CASE(missing_part_refused_naming_it) {
    test::TempFolder folder;
    const auto first = folder.write(part_name(1, 3), part_bytes(0, 3, 3, "a"));
    folder.write(part_name(3, 3), part_bytes(2, 3, 3, "c"));
    const auto missing = (folder.path() / part_name(2, 3)).string();
    test::expect_gguf_refused(first, "part 2 of 3 of the split model is missing", std::nullopt, missing);
}

// The real split set with its middle part taken away.
BOOST_AUTO_TEST_CASE(missing_part_of_the_vectors_refused) {
    test::TempFolder folder;
    for (const char* part : {"tiny-llama-Q4_K_M-00001-of-00003.gguf", "tiny-llama-Q4_K_M-00003-of-00003.gguf"}) {
        std::filesystem::copy_file(test::vectors_path(std::string("gguf/split/") + part), folder.path() / part);
    }
    const auto missing = (folder.path() / "tiny-llama-Q4_K_M-00002-of-00003.gguf").string();
    test::expect_gguf_refused(folder.path() / "tiny-llama-Q4_K_M-00003-of-00003.gguf",
                              "part 2 of 3 of the split model is missing", std::nullopt, missing);
}

BOOST_AUTO_TEST_CASE(foreign_part_refused_naming_it) {
    test::TempFolder folder;
    const auto first = folder.write(part_name(1, 2), part_bytes(0, 2, 2, "a"));
    const auto foreign = folder.write(part_name(2, 2), part_bytes(1, 3, 2, "b"));
    test::expect_gguf_refused(first, "is not part 2 of the split model", std::nullopt, foreign.string());
    const auto wrong_no = folder.write(part_name(2, 2), part_bytes(0, 2, 2, "b"));
    test::expect_gguf_refused(first, "it says split.no = 0", std::nullopt, wrong_no.string());
    const auto no_keys = folder.write(part_name(2, 2), GgufBuilder().bytes());
    test::expect_gguf_refused(first, "has no split.no", std::nullopt, no_keys.string());
}

BOOST_AUTO_TEST_CASE(tensor_total_must_match) {
    test::TempFolder folder;
    const auto first = folder.write(part_name(1, 2), part_bytes(0, 2, 3, "a"));
    folder.write(part_name(2, 2), part_bytes(1, 2, 3, "b"));
    test::expect_gguf_refused(first, "split.tensors.count says 3 tensors but the 2 parts hold 2", std::nullopt,
                              first.string());
}

BOOST_AUTO_TEST_CASE(same_tensor_in_two_parts_refused) {
    test::TempFolder folder;
    const auto first = folder.write(part_name(1, 2), part_bytes(0, 2, 2, "a"));
    const auto second = folder.write(part_name(2, 2), part_bytes(1, 2, 2, "a"));
    test::expect_gguf_refused(first, "tensor 'a' is also in " + first.string(), std::nullopt, second.string());
}

BOOST_AUTO_TEST_CASE(part_name_must_match_its_keys) {
    test::TempFolder folder;
    const auto plain = folder.write("model.gguf", part_bytes(0, 2, 2, "a"));
    test::expect_gguf_refused(plain, "so its name should be NAME-00001-of-00002.gguf");
    const auto renamed = folder.write(part_name(2, 2), part_bytes(0, 2, 2, "a"));
    test::expect_gguf_refused(renamed, "carries split.no = 0 and split.count = 2");
}

BOOST_AUTO_TEST_SUITE_END()
