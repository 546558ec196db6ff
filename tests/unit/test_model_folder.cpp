// The model folder of a mount without FUSE: which files are side files, which models a folder holds, the listing of a
// local folder, and the tree's side files, source/ and escaped tensor names.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "sources/model_candidates.hpp"
#include "temp_folder.hpp"
#include "tensorfs/content.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/json_files.hpp"
#include "tensorfs/local_folder.hpp"
#include "tensorfs/model_folder.hpp"
#include "tensorfs/dtype.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/stats.hpp"
#include "tensorfs/tree.hpp"

using namespace tensorfs;

BOOST_AUTO_TEST_SUITE(model_folder)

BOOST_AUTO_TEST_CASE(weights_and_indexes_are_no_side_files) {
    for (const char* weight : {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                               "pytorch_model.bin.index.json", "x.pt", "consolidated.pth", "m-Q4_K_M.gguf"}) {
        BOOST_TEST(is_weight_file(weight), weight);
    }
    for (const char* side : {"config.json", "tokenizer.model", "README.md", "safetensors.txt", ".gitattributes"}) {
        BOOST_TEST(!is_weight_file(side), side);
    }
    const std::vector<std::string> listing{".gitattributes", "config.json", "model.safetensors", "onnx/model.onnx",
                                           "original/params.json", "tokenizer.json"};
    const std::vector<std::string> side{".gitattributes", "config.json", "tokenizer.json"};
    BOOST_TEST(side_file_names(listing) == side, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(plain_relative_paths) {
    for (const char* good : {"a", "a/b.gguf", "..a/b..", ".hidden"}) BOOST_TEST(is_plain_relative_path(good), good);
    for (const char* bad : {"", "/a", "a/", "a//b", "../a", "a/./b", "a/.."}) {
        BOOST_TEST(!is_plain_relative_path(bad), bad);
    }
    BOOST_TEST(!is_plain_relative_path(std::string_view("a\0b", 3)));
}

std::vector<std::string> paths_of(const std::vector<ModelCandidate>& models) {
    std::vector<std::string> paths;
    for (const auto& model : models) paths.push_back(model.path);
    return paths;
}

BOOST_AUTO_TEST_CASE(one_model_by_the_folder_rule) {
    // A Hub repo with the model in safetensors and PyTorch form is one model: safetensors first.
    const auto both = models_in({"config.json", "model.safetensors", "pytorch_model.bin"});
    BOOST_REQUIRE(both.size() == 1u);
    BOOST_TEST(both[0].format == "safetensors");
    const auto shards = models_in({"a-00001-of-00002.safetensors", "a-00002-of-00002.safetensors"});
    BOOST_REQUIRE(shards.size() == 1u);
    BOOST_TEST(shards[0].files.size() == 2u);
    const auto split = models_in({"m-00001-of-00002.gguf", "m-00002-of-00002.gguf"});
    BOOST_REQUIRE(split.size() == 1u);
    BOOST_TEST(split[0].path == "m-00001-of-00002.gguf");
    BOOST_TEST(models_in({"README.md"}).empty());
}

BOOST_AUTO_TEST_CASE(several_models) {
    BOOST_TEST(paths_of(models_in({"m-Q4_K_M.gguf", "m-Q8_0.gguf", "m-f16-00001-of-00002.gguf",
                                   "m-f16-00002-of-00002.gguf"})) ==
                   (std::vector<std::string>{"m-Q4_K_M.gguf", "m-Q8_0.gguf", "m-f16-00001-of-00002.gguf"}),
               boost::test_tools::per_element());
    const auto beside = models_in({"model.gguf", "model.safetensors"});
    BOOST_TEST(paths_of(beside) == (std::vector<std::string>{"model.gguf", "model.safetensors"}),
               boost::test_tools::per_element());
    BOOST_TEST(beside[0].format == "gguf");
    BOOST_TEST(beside[1].format == "safetensors");
    BOOST_TEST(paths_of(models_in({"a.safetensors.index.json", "b.safetensors.index.json", "x.safetensors"})) ==
                   (std::vector<std::string>{"a.safetensors.index.json", "b.safetensors.index.json"}),
               boost::test_tools::per_element());
    // Shards without an index beside a GGUF: each is a candidate of its own (no one path names them all).
    BOOST_TEST(paths_of(models_in({"a.safetensors", "b.safetensors", "c.gguf"})) ==
                   (std::vector<std::string>{"a.safetensors", "b.safetensors", "c.gguf"}),
               boost::test_tools::per_element());
    BOOST_TEST(models_in({"pytorch_model.bin", "model.gguf"}).size() == 2u);
}

BOOST_AUTO_TEST_CASE(local_folder_lists_every_file_under_it) {
    const test::TempFolder folder;
    folder.write("b.txt", "b");
    folder.write("a/x.json", "x");
    folder.write("a/deep/y.bin", "y");
    folder.write(".git/HEAD", "ref: refs/heads/main");
    const LocalFolder local(folder.path());
    BOOST_TEST(local.list_all() == (std::vector<std::string>{"a/deep/y.bin", "a/x.json", "b.txt"}),
               boost::test_tools::per_element());
    BOOST_TEST(local.list() == (std::vector<std::string>{"b.txt"}), boost::test_tools::per_element());
    const ModelFolder files = files_of_folder(local, nullptr);
    BOOST_REQUIRE(files.source_files.size() == 3u);
    BOOST_TEST(files.source_files[1].object->size() == 1u);
    BOOST_REQUIRE(files.side_files.size() == 1u);
    BOOST_TEST(files.side_files[0].path == "b.txt");
}

BOOST_AUTO_TEST_CASE(tree_shows_side_files_and_source) {
    const test::TempFolder folder;
    for (const char* path : {"config.json", "model.json", "a/b/c.txt", "a/d.txt", "e.txt"}) folder.write(path, path);
    const LocalFolder local(folder.path());
    const ModelFolder files = files_of_folder(local, nullptr);
    BOOST_REQUIRE(files.side_files.size() == 2u);  // config.json, e.txt: the folder's model.json is none
    BOOST_TEST(files.side_files[1].path == "e.txt");
    Catalog catalog;
    catalog.format = "safetensors";
    catalog.files.push_back({"x.safetensors", "x.safetensors", 0, nullptr});
    for (const char* name : {"config.json", "source", "w", "e.txt"}) {
        Tensor tensor;
        tensor.name = name;
        tensor.type = safetensors_dtype_by_name("F32");
        tensor.shape = {1};
        tensor.elements = 1;
        tensor.nbytes = 4;
        catalog.tensors.push_back(tensor);
    }
    const Tree tree(catalog, true, &files);
    const Node root{NodeKind::Root};
    // Side files are reserved names: a tensor named like one is escaped, as one named source is.
    BOOST_TEST(tree.directory_name(0) == "%63onfig.json");
    BOOST_TEST(tree.directory_name(1) == "%73ource");
    BOOST_TEST(tree.directory_name(2) == "w");
    BOOST_TEST(tree.directory_name(3) == "%65.txt");
    BOOST_TEST((tree.lookup(root, "config.json")->kind == NodeKind::SideFile));
    // The folder's model.json stays in source/ only: the root's is tensorfs's.
    BOOST_TEST((tree.lookup(root, "model.json")->kind == NodeKind::ModelJson));
    const auto source = tree.lookup(root, "source");
    BOOST_REQUIRE(source.has_value());
    BOOST_TEST((source->kind == NodeKind::SourceDir));
    BOOST_TEST(tree.child_count(*source) == 4u);  // a/, config.json, e.txt, model.json
    const auto a = tree.lookup(*source, "a");
    BOOST_REQUIRE(a.has_value());
    const auto b = tree.lookup(*a, "b");
    BOOST_REQUIRE(b.has_value());
    const auto c = tree.lookup(*b, "c.txt");
    BOOST_REQUIRE(c.has_value());
    BOOST_TEST(files.source_files[c->tensor].path == "a/b/c.txt");
    BOOST_TEST((tree.parent_of(*c) == *b));
    BOOST_TEST((tree.parent_of(*b) == *a));
    BOOST_TEST((tree.parent_of(*a) == *source));
    BOOST_TEST((tree.parent_of(*source) == root));
    for (const Node node : {*source, *a, *b, *c, *tree.lookup(root, "config.json"), *tree.lookup(root, "%73ource")}) {
        const auto back = tree.node_of(Tree::inode_of(node));
        BOOST_REQUIRE(back.has_value());
        BOOST_TEST((*back == node));
    }
}

// A folder whose `locked` file exists but cannot be opened, as a file without read permission or one a server
// refuses (root, who runs the tests, opens every local file).
class FolderWithALockedFile : public LocalFolder {
public:
    FolderWithALockedFile(std::filesystem::path path, std::string locked)
        : LocalFolder(std::move(path)), locked_(std::move(locked)) {}
    std::shared_ptr<const SourceObject> open_if_exists(const std::string& relative) const override {
        if (relative == locked_) throw SourceError({{name_of(relative), "cannot open: Permission denied", {}}});
        return LocalFolder::open_if_exists(relative);
    }

private:
    std::string locked_;
};

BOOST_AUTO_TEST_CASE(a_file_that_cannot_be_opened_is_kept_with_its_problem) {
    const test::TempFolder folder;
    for (const char* path : {"config.json", "sub/locked.bin"}) folder.write(path, path);
    const FolderWithALockedFile local(folder.path(), "sub/locked.bin");
    const ModelFolder files = files_of_folder(local, nullptr);
    BOOST_REQUIRE(files.source_files.size() == 2u);
    const FolderFile& locked = files.source_files[1];
    BOOST_TEST(locked.path == "sub/locked.bin");
    BOOST_TEST(locked.problem == "cannot open: Permission denied");
    BOOST_TEST(locked.object->size() == 0u);
    char byte = 0;
    BOOST_CHECK_THROW(locked.object->read(0, 1, &byte), IoError);
    BOOST_TEST(files.source_files[0].problem.empty());

    // The mount's model.json names it; opening it through the tree is EIO (fuse_ops asks Content).
    const Catalog none;
    const Tree tree(none, false, &files);
    const nlohmann::ordered_json model = model_meta(none, tree);
    BOOST_TEST(model["problems"].dump() == R"([{"path":"sub/locked.bin","what":"cannot open: Permission denied"}])");
    const SourceFiles source_files(none, &files);
    Stats stats;
    const Content content(none, tree, source_files, stats);
    const auto sub = tree.lookup(*tree.lookup(Node{NodeKind::Root}, "source"), "sub");
    BOOST_REQUIRE(sub.has_value());
    BOOST_TEST(content.unopened(*tree.lookup(*sub, "locked.bin")));
    BOOST_TEST(!content.unopened(*tree.lookup(Node{NodeKind::Root}, "config.json")));
}

BOOST_AUTO_TEST_SUITE_END()
