// Header rules of the reference library (huggingface/safetensors tensor.rs) that the malformed corpus does not
// cover, one small file each.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "test_safetensors_files.hpp"

using namespace tensorfs;

namespace {

// An F32 [2] tensor entry at data_offsets [begin, begin + 8].
std::string f32_pair(std::uint64_t begin) {
    return R"({"dtype":"F32","shape":[2],"data_offsets":[)" + std::to_string(begin) + "," + std::to_string(begin + 8) +
           "]}";
}

struct OneFile {
    test::TempFolder folder;
    std::string path;

    OneFile(const std::string& header, const std::string& data)
        : path(folder.write("m.safetensors", test::safetensors_bytes(header, data))) {}

    Catalog open() const { return open_catalog(path); }
    std::string refusal() const {
        return test::refusal_of([&] { open(); });
    }
};

std::size_t line_count(const std::string& text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

void check_refused(const std::string& header, const std::string& data, const std::string& says) {
    const OneFile file(header, data);
    const std::string refusal = file.refusal();
    BOOST_TEST_CONTEXT(header << " -> " << refusal) {
        BOOST_TEST(refusal.rfind("tensorfs: " + file.path + ": ", 0) == 0);
        BOOST_TEST(refusal.find(says) != std::string::npos);
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(safetensors_rules)

BOOST_AUTO_TEST_CASE(leading_whitespace_and_padding_spaces_are_accepted) {
    const std::string header = "\n  {\"a\":" + f32_pair(0) + "}      ";
    const OneFile file(header, std::string(8, '\x01'));
    const Catalog catalog = file.open();
    BOOST_REQUIRE_EQUAL(catalog.tensors.size(), 1u);
    BOOST_TEST(catalog.tensors[0].offset == 8u + header.size());
    BOOST_TEST(catalog.files[0].display == "m.safetensors");
}

BOOST_AUTO_TEST_CASE(a_file_without_tensors_is_accepted) {
    const OneFile file(R"({"__metadata__":{"k":"v"}})", "");
    const Catalog catalog = file.open();
    BOOST_TEST(catalog.tensors.empty());
    BOOST_TEST(catalog.metadata.dump() == R"({"k":"v"})");
}

BOOST_AUTO_TEST_CASE(null_metadata_counts_as_none) {
    const OneFile file(R"({"__metadata__":null,"a":)" + f32_pair(0) + "}", std::string(8, '\0'));
    BOOST_TEST(file.open().metadata.empty());
}

BOOST_AUTO_TEST_CASE(tensors_are_sorted_by_offset_whatever_the_header_order) {
    const OneFile file(R"({"z":)" + f32_pair(0) + R"(,"a":)" + f32_pair(8) + "}", std::string(16, '\0'));
    const Catalog catalog = file.open();
    BOOST_REQUIRE_EQUAL(catalog.tensors.size(), 2u);
    BOOST_TEST(catalog.tensors[0].name == "z");
    BOOST_TEST(catalog.tensors[1].name == "a");
    BOOST_TEST(catalog.tensors[1].offset - catalog.tensors[0].offset == 8u);
}

BOOST_AUTO_TEST_CASE(bytes_after_the_last_tensor_are_refused) {
    check_refused(R"({"a":)" + f32_pair(0) + "}", std::string(12, '\0'),
                  "4 bytes after the last tensor's data belong to no tensor");
}

BOOST_AUTO_TEST_CASE(data_without_tensors_is_refused) {
    check_refused("{}", "xyz", "3 bytes after the last tensor's data belong to no tensor");
}

BOOST_AUTO_TEST_CASE(a_first_tensor_past_offset_zero_leaves_a_gap) {
    check_refused(R"({"a":)" + f32_pair(4) + "}", std::string(12, '\0'),
                  "tensor \"a\": 4 bytes before it belong to no tensor (at the start of the data section)");
}

BOOST_AUTO_TEST_CASE(an_empty_name_is_refused) {
    check_refused(R"({"":)" + f32_pair(0) + "}", std::string(8, '\0'), "a tensor has an empty name");
}

BOOST_AUTO_TEST_CASE(metadata_values_must_be_strings) {
    check_refused(R"({"__metadata__":{"n":5},"a":)" + f32_pair(0) + "}", std::string(8, '\0'),
                  "__metadata__ value of \"n\" is a JSON number, not a string");
    check_refused(R"({"__metadata__":["x"],"a":)" + f32_pair(0) + "}", std::string(8, '\0'),
                  "__metadata__ is a JSON array, not an object of strings");
}

BOOST_AUTO_TEST_CASE(extra_fields_of_an_entry_are_ignored_like_the_reference_does) {
    const OneFile file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}})", std::string(8, '\0'));
    BOOST_TEST(file.open().tensors.size() == 1u);
}

BOOST_AUTO_TEST_CASE(entries_need_dtype_shape_and_data_offsets) {
    check_refused(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", std::string(8, '\0'), "tensor \"a\": no shape");
    check_refused(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0'), "tensor \"a\": no dtype");
    check_refused(R"({"a":{"dtype":"F32","shape":[2]}})", std::string(8, '\0'), "tensor \"a\": no data_offsets");
    check_refused(R"({"a":[1,2]})", "", "tensor \"a\": its entry is a JSON array, not an object");
    check_refused(R"({"a":{"dtype":32,"shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0'),
                  "tensor \"a\": dtype 32 is not a string");
}

BOOST_AUTO_TEST_CASE(data_offsets_are_exactly_two_ordered_integers) {
    check_refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}})", std::string(8, '\0'),
                  "data_offsets [0,8,8] is not a pair of non-negative integers");
    check_refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0.0,8]}})", std::string(8, '\0'),
                  "is not a pair of non-negative integers");
    check_refused(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", std::string(8, '\0'),
                  "tensor \"a\": data_offsets [8, 0] end before they begin");
    check_refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551616]}})", "",
                  "is not a pair of non-negative integers");
}

BOOST_AUTO_TEST_CASE(sub_byte_types_fill_whole_bytes) {
    const OneFile f4(R"({"a":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]}})", "abc");
    BOOST_TEST(f4.refusal().empty());
    BOOST_TEST(f4.open().tensors[0].blocks() == 3u);
    const OneFile f6(R"({"a":{"dtype":"F6_E3M2","shape":[8],"data_offsets":[0,6]}})", "abcdef");
    BOOST_TEST(f6.refusal().empty());
    BOOST_TEST(f6.open().tensors[0].blocks() == 2u);
    check_refused(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}})", "a",
                  "tensor \"a\": 3 elements of F4 do not fill a whole number of bytes");
    check_refused(R"({"a":{"dtype":"F6_E2M3","shape":[2],"data_offsets":[0,1]}})", "a",
                  "tensor \"a\": 2 elements of F6_E2M3 do not fill a whole number of bytes");
}

BOOST_AUTO_TEST_CASE(sizes_that_overflow_are_refused) {
    check_refused(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296,2],"data_offsets":[0,0]}})", "",
                  "tensor \"a\": shape [4294967296, 4294967296, 2] has more than 2^64 elements");
    check_refused(R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}})", "",
                  "is too large: its size overflows 64 bits");
}

BOOST_AUTO_TEST_CASE(a_header_that_is_not_utf8_is_refused_at_its_byte) {
    // "é" as C3 A9 is fine; the lone continuation byte 0x80 at header byte 12 (file byte 20) is not.
    check_refused("{\"a\xC3\xA9\":{}, \"\x80\":{}}", "", "header is not valid UTF-8 (at byte 20)");
}

BOOST_AUTO_TEST_CASE(a_number_beyond_double_is_refused_not_thrown) {
    check_refused(R"({"a":{"dtype":"F32","shape":[1e400],"data_offsets":[0,0]}})", "",
                  "header is not valid JSON: number overflow parsing '1e400'");
}

BOOST_AUTO_TEST_CASE(deep_nesting_is_refused_before_it_builds_anything) {
    check_refused("{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}", "",
                  "header nests JSON deeper than 127 levels");
}

BOOST_AUTO_TEST_CASE(a_duplicate_field_inside_an_entry_is_refused) {
    check_refused(R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0'),
                  "JSON key \"dtype\" appears twice in the header, in the object of \"a\"");
}

BOOST_AUTO_TEST_CASE(every_problem_is_reported_not_only_the_first) {
    const OneFile file(R"({"a":{"dtype":"F12","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[-1],"data_offsets":[8,16]},)"
                       R"("c":{"dtype":"F32","shape":[3],"data_offsets":[16,24]}})",
                       std::string(24, '\0'));
    const std::string refusal = file.refusal();
    BOOST_TEST_CONTEXT(refusal) {
        BOOST_TEST(line_count(refusal) == 3u);
        BOOST_TEST(refusal.find("tensor \"a\": unknown dtype \"F12\"") != std::string::npos);
        BOOST_TEST(refusal.find("tensor \"b\": shape [-1] is not a list of non-negative integers") !=
                   std::string::npos);
        BOOST_TEST(refusal.find("tensor \"c\": shape [3] of F32 takes 12 bytes but data_offsets [16, 24] hold 8") !=
                   std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(names_are_printed_on_one_line) {
    const OneFile file(R"({"x\ny\u0000":{"dtype":"F12","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0'));
    const std::string refusal = file.refusal();
    BOOST_TEST(line_count(refusal) == 1u);
    BOOST_TEST(refusal.find(R"(tensor "x\ny\u0000": unknown dtype)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_missing_file_is_a_problem_not_a_crash) {
    const test::TempFolder folder;
    const std::string path = (folder.path() / "absent.safetensors").string();
    const std::string refusal =
        test::refusal_of([&] { open_safetensors_files(LocalFolder(folder.path()), {"absent.safetensors"}); });
    BOOST_TEST(refusal == "tensorfs: " + path + ": no such file\n");
}

BOOST_AUTO_TEST_SUITE_END()
