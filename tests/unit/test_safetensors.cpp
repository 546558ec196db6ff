// The safetensors parser on the reference vectors: every tensor as manifest.json describes it, decoded
// bit-exactly, and every malformed file refused (or accepted) as the corpus README says.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <map>

#include "format/formats.hpp"
#include "test_safetensors_files.hpp"
#include "vectors.hpp"

using namespace tensorfs;
namespace fs = std::filesystem;

namespace {

Catalog open_one(const std::string& path) { return open_catalog(path); }

}  // namespace

BOOST_AUTO_TEST_SUITE(safetensors_parser)

BOOST_AUTO_TEST_CASE(all_dtypes_matches_the_manifest_and_decodes_exactly) {
    for (const auto& file : test::manifest()["safetensors"]) {
        const std::string relative = file["file"];
        if (relative.find("all_dtypes") == std::string::npos) continue;
        const std::string path = test::vectors_path(relative);
        const Catalog catalog = open_one(path);
        BOOST_TEST(catalog.format == "safetensors");
        BOOST_REQUIRE_EQUAL(catalog.files.size(), 1u);
        BOOST_TEST(catalog.files[0].display == "all_dtypes.safetensors");
        BOOST_TEST(catalog.files[0].size == file["file_size"].get<std::uint64_t>());
        BOOST_TEST(catalog.metadata.dump() == nlohmann::ordered_json(file["metadata"]).dump());

        const auto& expected_tensors = file["tensors"];
        BOOST_REQUIRE_EQUAL(catalog.tensors.size(), expected_tensors.size());
        for (std::size_t i = 0; i < catalog.tensors.size(); ++i) {
            const Tensor& tensor = catalog.tensors[i];
            const auto& expected = expected_tensors[i];  // the manifest lists them in offset order too
            BOOST_TEST_CONTEXT(expected["name"].get<std::string>()) {
                BOOST_TEST(tensor.name == expected["name"].get<std::string>());
                BOOST_TEST(tensor.type->name == expected["dtype"].get<std::string>());
                BOOST_TEST(tensor.shape == expected["shape"].get<std::vector<std::uint64_t>>(),
                           boost::test_tools::per_element());
                BOOST_TEST(tensor.elements == expected["nelements"].get<std::uint64_t>());
                BOOST_TEST(tensor.offset == expected["abs_offset"].get<std::uint64_t>());
                BOOST_TEST(tensor.nbytes == expected["raw_nbytes"].get<std::uint64_t>());
                BOOST_TEST(tensor.file == 0u);

                const auto raw = test::read_bytes(path, tensor.offset, tensor.nbytes);
                std::vector<float> decoded(tensor.elements);
                tensor.type->portable(raw.data(), tensor.blocks(), decoded.data());
                test::check_same_floats(test::read_f32_file(test::vectors_path(expected["expected_f32"])),
                                        decoded.data(), decoded.size(), tensor.name);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(malformed_corpus_gets_the_readme_outcome) {
    // What the one-line message of each refused file must say (the README's description, in our words).
    const std::map<std::string, std::string> says = {
        {"header_len_gt_file", "runs past the end of the file"},
        {"header_len_zero", "header is not valid JSON"},
        {"invalid_json", "header is not valid JSON"},
        {"json_not_object", "header is a JSON array, not an object"},
        {"unknown_dtype", "unknown dtype \"F12\""},
        {"size_mismatch", "shape [2, 4] of F32 takes 32 bytes but data_offsets [0, 24] hold 24"},
        {"overlapping_offsets", "overlap tensor"},
        {"offsets_out_of_range", "run past the end of the file"},
        {"gap_between_tensors", "bytes before it belong to no tensor"},
        {"negative_shape", "is not a list of non-negative integers"},
        {"negative_offset", "is not a pair of non-negative integers"},
        {"non_integer_shape", "is not a list of non-negative integers"},
        {"duplicate_keys", "JSON key \"a\" appears twice in the header"},
        {"header_100mb", "is over the limit of 100000000 bytes"},
        {"truncated_data", "run past the end of the file"},
        {"empty", "too short for the 8-byte header length"},
        {"seven_bytes", "too short for the 8-byte header length"},
    };
    std::size_t checked = 0;
    for (const auto& entry : test::manifest()["malformed"]) {
        if (entry["format"] != "safetensors") continue;
        const std::string relative = entry["file"];
        const std::string stem = fs::path(relative).stem().string();
        const std::string path = test::vectors_path(relative);
        const std::string refusal = test::refusal_of([&] { open_one(path); });
        BOOST_TEST_CONTEXT(relative << " -> " << refusal) {
            if (entry["expected"] == "must be accepted") {
                BOOST_TEST(refusal.empty());
            } else {
                BOOST_REQUIRE(says.count(stem) == 1);
                BOOST_TEST(refusal.rfind("tensorfs: " + path + ": ", 0) == 0);
                BOOST_TEST(refusal.find(says.at(stem)) != std::string::npos);
            }
        }
        ++checked;
    }
    BOOST_TEST(checked == 21u);
}

BOOST_AUTO_TEST_CASE(odd_names_are_accepted_as_they_are) {
    const auto slash = open_one(test::vectors_path("malformed/name_with_slash.safetensors"));
    const auto dotdot = open_one(test::vectors_path("malformed/name_dotdot.safetensors"));
    const auto nul = open_one(test::vectors_path("malformed/name_nul.safetensors"));
    auto has = [](const Catalog& catalog, const std::string& name) {
        for (const auto& tensor : catalog.tensors) {
            if (tensor.name == name) return true;
        }
        return false;
    };
    bool any_slash = false;
    for (const auto& tensor : slash.tensors) any_slash = any_slash || tensor.name.find('/') != std::string::npos;
    BOOST_TEST(any_slash);
    BOOST_TEST(has(dotdot, ".."));
    bool any_nul = false;
    for (const auto& tensor : nul.tensors) any_nul = any_nul || tensor.name.find('\0') != std::string::npos;
    BOOST_TEST(any_nul);
}

BOOST_AUTO_TEST_SUITE_END()
