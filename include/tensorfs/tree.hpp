// The mounted tree: which nodes exist, their inode numbers, names and children. Built once at mount; immutable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tensorfs/catalog.hpp"

namespace tensorfs {

enum class NodeKind : std::uint8_t {
    Root,
    ModelJson,
    StatsDir,     // .tensorfs
    StatsJson,    // .tensorfs/stats.json
    Metrics,      // .tensorfs/metrics
    TensorDir,
    Raw,
    MetaJson,
    DequantF32,
    DequantNpy,
};

struct Node {
    NodeKind kind = NodeKind::Root;
    std::uint32_t tensor = 0;  // for TensorDir and the files in it

    bool is_directory() const {
        return kind == NodeKind::Root || kind == NodeKind::StatsDir || kind == NodeKind::TensorDir;
    }
    bool operator==(const Node&) const = default;
};

struct DirEntry {
    std::string_view name;
    Node node;
};

class Tree {
public:
    // Throws InvalidSource when two tensors would get the same directory name or a name is empty.
    explicit Tree(const Catalog& catalog);

    // Inode numbers encode the node, so no table is needed: 1 root, 2..5 fixed entries, then 8 per tensor.
    static std::uint64_t inode_of(Node node);
    std::optional<Node> node_of(std::uint64_t inode) const;

    std::optional<Node> lookup(Node parent, std::string_view name) const;
    Node parent_of(Node node) const;

    std::size_t child_count(Node directory) const;
    // The `index`-th child of a directory (stable order: fixed entries first, then tensors in catalog order).
    DirEntry child(Node directory, std::size_t index) const;

    const std::string& directory_name(std::uint32_t tensor) const { return directory_names_[tensor]; }
    std::size_t tensor_count() const { return directory_names_.size(); }

    // Tensor dtypes without a float32 conversion have no dequant files.
    bool has_dequant(std::uint32_t tensor) const { return has_dequant_[tensor]; }

private:
    std::vector<std::string> directory_names_;
    std::vector<bool> has_dequant_;
    std::unordered_map<std::string_view, std::uint32_t> tensor_by_directory_;
};

}  // namespace tensorfs
