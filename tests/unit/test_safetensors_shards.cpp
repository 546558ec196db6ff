// Several safetensors files as one model: the sharded vectors from their index and from the folder's file list,
// and the errors an index and its shards can disagree in.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "refusal_words.hpp"
#include "tensorfs/open_source.hpp"
#include "test_safetensors_files.hpp"
#include "vectors.hpp"

using namespace tensorfs;
using test::check_says;
namespace fs = std::filesystem;

namespace {

void check_same_catalog(const Catalog& a, const Catalog& b) {
    BOOST_TEST(a.format == b.format);
    BOOST_REQUIRE_EQUAL(a.files.size(), b.files.size());
    for (std::size_t i = 0; i < a.files.size(); ++i) {
        BOOST_TEST(a.files[i].path == b.files[i].path);
        BOOST_TEST(a.files[i].display == b.files[i].display);
        BOOST_TEST(a.files[i].size == b.files[i].size);
    }
    BOOST_REQUIRE_EQUAL(a.tensors.size(), b.tensors.size());
    for (std::size_t i = 0; i < a.tensors.size(); ++i) {
        const Tensor& x = a.tensors[i];
        const Tensor& y = b.tensors[i];
        BOOST_TEST_CONTEXT(x.name) {
            BOOST_TEST(x.name == y.name);
            BOOST_TEST(x.type == y.type);
            BOOST_TEST(x.shape == y.shape, boost::test_tools::per_element());
            BOOST_TEST(x.elements == y.elements);
            BOOST_TEST(x.nbytes == y.nbytes);
            BOOST_TEST(x.file == y.file);
            BOOST_TEST(x.offset == y.offset);
        }
    }
}

std::vector<std::string> safetensors_files_of(const fs::path& folder) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(folder)) {
        if (entry.path().extension() == ".safetensors") files.push_back(entry.path().filename());
    }
    std::sort(files.begin(), files.end());
    return files;
}

// A file holding F32 [2] tensors named `names`, one after the other, with `metadata` (a JSON object) if given.
std::string shard_with(const std::vector<std::string>& names, const std::string& metadata = "") {
    std::string header = "{";
    if (!metadata.empty()) header += R"("__metadata__":)" + metadata + ",";
    for (std::size_t i = 0; i < names.size(); ++i) {
        header += (i ? "," : "") + std::string("\"") + names[i] + R"(":{"dtype":"F32","shape":[2],"data_offsets":[)" +
                  std::to_string(8 * i) + "," + std::to_string(8 * i + 8) + "]}";
    }
    return test::safetensors_bytes(header + "}", std::string(8 * names.size(), '\0'));
}

// A folder with shard a.safetensors (tensors x, y) and b.safetensors (tensor z), plus an index written on demand.
struct ShardedModel {
    test::TempFolder folder;
    ShardedModel() {
        folder.write("a.safetensors", shard_with({"x", "y"}, R"({"format":"pt"})"));
        folder.write("b.safetensors", shard_with({"z"}, R"({"format":"pt"})"));
    }
    Catalog open_index(const std::string& index_json) const {
        return open_catalog(folder.write("m.safetensors.index.json", index_json));
    }
    std::string refusal(const std::string& index_json) const {
        return test::refusal_of([&] { open_index(index_json); });
    }
};

const char* const kGoodWeightMap = R"("weight_map":{"x":"a.safetensors","y":"a.safetensors","z":"b.safetensors"})";

}  // namespace

BOOST_AUTO_TEST_SUITE(safetensors_shards)

BOOST_AUTO_TEST_CASE(index_and_folder_list_give_the_same_catalog) {
    const fs::path folder = test::vectors_path("safetensors/sharded");
    const Catalog from_folder = open_safetensors_files(LocalFolder(folder), safetensors_files_of(folder));
    const Catalog from_index = open_catalog(folder / "model.safetensors.index.json");
    check_same_catalog(from_folder, from_index);
    check_same_catalog(from_index, open_catalog(folder.string()));
    BOOST_TEST(from_index.tensors.size() == 21u);
    BOOST_TEST(from_index.files[0].display == "model-00001-of-00003.safetensors");
    // Only the index knows total_size; it keeps its JSON number, and comes first.
    BOOST_TEST(from_folder.metadata.dump() == R"({"format":"pt"})");
    BOOST_TEST(from_index.metadata.dump() == R"({"total_size":189056,"format":"pt"})");
}

BOOST_AUTO_TEST_CASE(every_shard_tensor_matches_the_manifest_and_decodes_exactly) {
    const fs::path folder = test::vectors_path("safetensors/sharded");
    const Catalog catalog = open_catalog(folder / "model.safetensors.index.json");
    std::size_t checked = 0;
    for (const auto& file : test::manifest()["safetensors"]) {
        const std::string relative = file["file"];
        if (relative.find("sharded/") == std::string::npos) continue;
        for (const auto& expected : file["tensors"]) {
            const auto found = std::find_if(catalog.tensors.begin(), catalog.tensors.end(),
                                            [&](const Tensor& t) { return t.name == expected["name"]; });
            BOOST_REQUIRE(found != catalog.tensors.end());
            const SourceFile& source = catalog.files[found->file];
            BOOST_TEST_CONTEXT(found->name) {
                BOOST_TEST(source.display == fs::path(relative).filename().string());
                BOOST_TEST(found->offset == expected["abs_offset"].get<std::uint64_t>());
                BOOST_TEST(found->nbytes == expected["raw_nbytes"].get<std::uint64_t>());
                BOOST_TEST(found->shape == expected["shape"].get<std::vector<std::uint64_t>>(),
                           boost::test_tools::per_element());
                const auto raw = test::read_bytes(source.path, found->offset, found->nbytes);
                std::vector<float> decoded(found->elements);
                found->type->portable(raw.data(), found->blocks(), decoded.data());
                test::check_same_floats(test::read_f32_file(test::vectors_path(expected["expected_f32"])),
                                        decoded.data(), decoded.size(), found->name);
            }
            ++checked;
        }
    }
    BOOST_TEST(checked == 21u);
}

BOOST_AUTO_TEST_CASE(a_tensor_in_two_files_names_both) {
    const test::TempFolder folder;
    const auto a = folder.write("model-00001-of-00002.safetensors", shard_with({"w", "v"}));
    const auto b = folder.write("model-00002-of-00002.safetensors", shard_with({"w"}));
    const std::string refusal =
        test::refusal_of([&] { open_safetensors_files(LocalFolder(folder.path()), {a.filename(), b.filename()}); });
    BOOST_TEST(refusal == "tensorfs: " + b.string() +
                              ": tensor \"w\" is in both model-00001-of-00002.safetensors and "
                              "model-00002-of-00002.safetensors\n");
}

BOOST_AUTO_TEST_CASE(metadata_is_the_union_and_the_first_file_wins_a_conflict) {
    const test::TempFolder folder;
    const auto a = folder.write("a.safetensors", shard_with({"x"}, R"({"format":"pt","step":"1"})"));
    const auto b = folder.write("b.safetensors", shard_with({"y"}, R"({"format":"pt","step":"2","extra":"e"})"));
    const Catalog catalog = open_safetensors_files(LocalFolder(folder.path()), {a.filename(), b.filename()});
    BOOST_TEST(catalog.metadata.dump() == R"({"format":"pt","step":"1","extra":"e"})");
}

BOOST_AUTO_TEST_CASE(an_index_keeps_its_metadata_values_as_json) {
    const ShardedModel model;
    const Catalog catalog = model.open_index(
        R"({"metadata":{"total_size":24,"big":18446744073709551615,"flag":true,"nested":{"k":[1,"2"]},"format":"x"},)" +
        std::string(kGoodWeightMap) + "}");
    BOOST_TEST(catalog.tensors.size() == 3u);
    BOOST_TEST(catalog.files.size() == 2u);
    BOOST_TEST(catalog.metadata["total_size"] == 24);
    BOOST_TEST(catalog.metadata["big"].get<std::uint64_t>() == 18446744073709551615ull);
    BOOST_TEST(catalog.metadata["flag"] == true);
    BOOST_TEST(catalog.metadata["nested"].dump() == R"({"k":[1,"2"]})");
    BOOST_TEST(catalog.metadata["format"] == "x");  // the index's value wins over the shards'
}

BOOST_AUTO_TEST_CASE(shards_in_a_subfolder_are_shown_relative_to_the_index) {
    const test::TempFolder folder;
    folder.write("sub/a.safetensors", shard_with({"x"}));
    const auto index = folder.write("m.safetensors.index.json", R"({"weight_map":{"x":"./sub/a.safetensors"}})");
    const Catalog catalog = open_catalog(index);
    BOOST_REQUIRE_EQUAL(catalog.files.size(), 1u);
    BOOST_TEST(catalog.files[0].display == "sub/a.safetensors");
}

BOOST_AUTO_TEST_CASE(a_missing_shard_is_refused) {
    const ShardedModel model;
    check_says(model.refusal(R"({"weight_map":{"x":"a.safetensors","y":"a.safetensors","z":"b.safetensors",)"
                             R"("q":"c.safetensors"}})"),
               "weight_map names shard \"c.safetensors\", which is not a file");
}

BOOST_AUTO_TEST_CASE(a_tensor_the_shard_lacks_is_refused) {
    const ShardedModel model;
    const std::string refusal =
        model.refusal(R"({"weight_map":{"x":"a.safetensors","y":"a.safetensors","z":"b.safetensors",)"
                      R"("q":"a.safetensors"}})");
    check_says(refusal, "weight_map puts tensor \"q\" in a.safetensors, which lacks it");
}

BOOST_AUTO_TEST_CASE(a_shard_tensor_the_index_does_not_name_is_refused) {
    const ShardedModel model;
    const std::string refusal = model.refusal(R"({"weight_map":{"x":"a.safetensors","z":"b.safetensors"}})");
    check_says(refusal, "a.safetensors: tensor \"y\" is not in the weight_map of ");
}

BOOST_AUTO_TEST_CASE(tensors_in_other_shards_than_the_index_says_are_refused_once_each) {
    const ShardedModel model;
    // y is in a and z in b, the other way round: one line each, and no "lacks it" on top.
    const std::string refusal =
        model.refusal(R"({"weight_map":{"x":"a.safetensors","y":"b.safetensors","z":"a.safetensors"}})");
    BOOST_TEST(std::count(refusal.begin(), refusal.end(), '\n') == 2, refusal);
    check_says(refusal, "weight_map puts tensor \"y\" in b.safetensors, but it is in a.safetensors");
    check_says(refusal, "weight_map puts tensor \"z\" in a.safetensors, but it is in b.safetensors");
}

BOOST_AUTO_TEST_CASE(a_shard_the_index_does_not_name_is_not_part_of_the_model) {
    const ShardedModel model;
    const Catalog catalog = model.open_index(R"({"weight_map":{"x":"a.safetensors","y":"a.safetensors"}})");
    BOOST_TEST(catalog.files.size() == 1u);
    BOOST_TEST(catalog.tensors.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_tensor_in_two_shards_of_an_index_names_both) {
    const ShardedModel model;
    model.folder.write("b.safetensors", shard_with({"z", "x"}));
    check_says(model.refusal("{" + std::string(kGoodWeightMap) + "}"),
               "tensor \"x\" is in both a.safetensors and b.safetensors");
}

BOOST_AUTO_TEST_CASE(a_broken_shard_is_reported_with_its_own_path) {
    const ShardedModel model;
    model.folder.write("b.safetensors", test::safetensors_bytes("{", ""));
    check_says(model.refusal("{" + std::string(kGoodWeightMap) + "}"),
               (model.folder.path() / "b.safetensors").string() + ": header is not valid JSON");
}

BOOST_AUTO_TEST_CASE(a_broken_index_is_refused) {
    const ShardedModel model;
    check_says(model.refusal(R"({"metadata":{}})"), "index has no weight_map");
    check_says(model.refusal(R"({"weight_map":["a.safetensors"]})"), "index weight_map is a JSON array, not an object");
    check_says(model.refusal(R"({"weight_map":{"x":1}})"),
               "weight_map gives tensor \"x\" the shard 1, not a file name");
    check_says(model.refusal(R"({"weight_map":{"x":"../a.safetensors"}})"),
               "weight_map puts tensor \"x\" in \"../a.safetensors\", which is not a file inside the index's folder");
    check_says(model.refusal(R"({"weight_map":{"x":"/etc/passwd"}})"), "which is not a file inside the index's folder");
    check_says(model.refusal(R"({"weight_map":{"x":"a.safetensors\u0000"}})"),
               R"(in "a.safetensors\u0000", which is not a file inside the index's folder)");
    check_says(model.refusal(R"({"weight_map":{"x":"a.safetensors",)"), "index is not valid JSON");
    check_says(model.refusal(R"({"metadata":"big",)" + std::string(kGoodWeightMap) + "}"),
               "index metadata is a JSON string, not an object");
    check_says(model.refusal(R"({"weight_map":{"x":"a.safetensors","x":"b.safetensors"}})"),
               "JSON key \"x\" appears twice in the index, in the object of \"weight_map\"");
    check_says(model.refusal("[]"), "index is a JSON array, not an object");
}

BOOST_AUTO_TEST_SUITE_END()
