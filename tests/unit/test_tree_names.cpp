// Directory names of tensors (interface contract, "Names") and the tree built from a catalog.
#include <boost/test/unit_test.hpp>

#include "tensorfs/errors.hpp"
#include "tensorfs/names.hpp"
#include "tensorfs/tree.hpp"

using namespace tensorfs;

BOOST_AUTO_TEST_SUITE(tree_names)

BOOST_AUTO_TEST_CASE(escapes_percent_slash_nul_and_leading_dot) {
    BOOST_TEST(directory_name_for("blk.0.attn_q.weight") == "blk.0.attn_q.weight");
    BOOST_TEST(directory_name_for("a/b") == "a%2Fb");
    BOOST_TEST(directory_name_for("100%") == "100%25");
    BOOST_TEST(directory_name_for(std::string_view("a\0b", 3)) == "a%00b");
    BOOST_TEST(directory_name_for("..") == "%2E.");
    BOOST_TEST(directory_name_for(".x") == "%2Ex");
    BOOST_TEST(directory_name_for("x.") == "x.");
    BOOST_TEST(directory_name_for(".tensorfs") == "%2Etensorfs");
}

BOOST_AUTO_TEST_CASE(reserved_root_name_gets_its_first_byte_escaped) {
    BOOST_TEST(directory_name_for("model.json") == "%6Dodel.json");
    BOOST_TEST(directory_name_for("model.json.x") == "model.json.x");
}

BOOST_AUTO_TEST_CASE(long_names_are_cut_with_a_hash_suffix) {
    const std::string a(300, 'a');
    std::string b = a;
    b.back() = 'b';
    const std::string name_a = directory_name_for(a);
    const std::string name_b = directory_name_for(b);
    BOOST_TEST(name_a.size() <= kMaxDirectoryName);
    BOOST_TEST(name_b.size() <= kMaxDirectoryName);
    BOOST_TEST(name_a != name_b);
    BOOST_TEST(name_a.substr(0, 200) == a.substr(0, 200));
    // A cut never splits a %XX escape.
    const std::string slashes(300, '/');
    const std::string escaped = directory_name_for(slashes);
    const std::size_t tilde = escaped.rfind('~');
    BOOST_TEST(tilde % 3 == 0);
    BOOST_TEST(escaped.size() <= kMaxDirectoryName);
}

namespace {
Catalog catalog_of(std::vector<std::string> names, const TypeTraits* type) {
    Catalog catalog;
    catalog.format = "safetensors";
    catalog.files.push_back({"x.safetensors", "x.safetensors", 0, nullptr});
    for (auto& name : names) {
        Tensor t;
        t.name = std::move(name);
        t.type = type;
        t.shape = {2};
        t.elements = 2;
        t.nbytes = 2 * type->block_bytes;
        catalog.tensors.push_back(t);
    }
    return catalog;
}
}  // namespace

BOOST_AUTO_TEST_CASE(tree_lookup_inodes_and_listing) {
    const Catalog catalog = catalog_of({"w", "a/b", ".."}, safetensors_dtype_by_name("F32"));
    const Tree tree(catalog);
    const Node root{NodeKind::Root};
    BOOST_TEST(tree.child_count(root) == 5u);
    BOOST_TEST(tree.child(root, 0).name == "model.json");
    BOOST_TEST(tree.child(root, 1).name == ".tensorfs");
    BOOST_TEST(tree.child(root, 3).name == "a%2Fb");
    const auto dir = tree.lookup(root, "%2E.");
    BOOST_REQUIRE(dir.has_value());
    BOOST_TEST(dir->tensor == 2u);
    BOOST_TEST(!tree.lookup(root, "..").has_value());
    BOOST_TEST(!tree.lookup(root, "a/b").has_value());
    const auto raw = tree.lookup(*dir, "raw");
    BOOST_REQUIRE(raw.has_value());
    // Every node's inode leads back to it.
    for (const Node node : {root, *dir, *raw, *tree.lookup(*dir, "dequant.npy"), Node{NodeKind::StatsJson}}) {
        const auto back = tree.node_of(Tree::inode_of(node));
        BOOST_REQUIRE(back.has_value());
        BOOST_TEST((*back == node));
    }
    BOOST_TEST(!tree.node_of(0).has_value());
    BOOST_TEST(!tree.node_of(Tree::inode_of(Node{NodeKind::TensorDir, 3})).has_value());
}

BOOST_AUTO_TEST_CASE(tensors_without_float_conversion_have_no_dequant_files) {
    const Catalog catalog = catalog_of({"c"}, safetensors_dtype_by_name("C64"));
    const Tree tree(catalog);
    const Node dir{NodeKind::TensorDir, 0};
    BOOST_TEST(tree.child_count(dir) == 2u);
    BOOST_TEST(!tree.lookup(dir, "dequant.f32").has_value());
    BOOST_TEST(!tree.node_of(Tree::inode_of(Node{NodeKind::DequantNpy, 0})).has_value());
}

BOOST_AUTO_TEST_CASE(empty_names_and_colliding_names_are_refused) {
    BOOST_CHECK_THROW(Tree(catalog_of({""}, safetensors_dtype_by_name("F32"))), SourceError);
    const std::string long_a(300, 'a');
    BOOST_CHECK_NO_THROW(Tree(catalog_of({long_a, long_a + "b"}, safetensors_dtype_by_name("F32"))));
}

BOOST_AUTO_TEST_SUITE_END()
