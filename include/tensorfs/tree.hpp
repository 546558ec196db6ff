// The mounted tree: which nodes exist, their inode numbers, names and children. Built once at mount; immutable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/model_folder.hpp"

namespace tensorfs {

enum class NodeKind : std::uint8_t {
    Root,
    ModelJson,
    ModelSafetensors,
    StatsDir,     // .tensorfs
    StatsJson,    // .tensorfs/stats.json
    Metrics,      // .tensorfs/metrics
    TensorDir,
    Raw,
    MetaJson,
    DequantF32,
    DequantNpy,
    DequantBf16,
    DequantF16,
    SideFile,     // a side file at the root (config.json...): `index` into ModelFolder::side_files
    SourceDir,    // source/ (index 0) and its subfolders
    SourceFile,   // a file in source/: `index` into ModelFolder::source_files
};

struct Node {
    NodeKind kind = NodeKind::Root;
    std::uint32_t tensor = 0;  // for TensorDir and the files in it; the index of a side or source node

    bool is_directory() const {
        return kind == NodeKind::Root || kind == NodeKind::StatsDir || kind == NodeKind::TensorDir ||
               kind == NodeKind::SourceDir;
    }
    bool operator==(const Node&) const = default;
};

struct DirEntry {
    std::string_view name;
    Node node;
};

class Tree {
public:
    // `model_safetensors`: whether the root shows model.safetensors (a ModelExport that is available). `folder`:
    // the side files and source/ of the root (none without it). Throws SourceError when two tensors would get the
    // same directory name or a name is empty. `catalog` and `folder` must outlive the tree.
    explicit Tree(const Catalog& catalog, bool model_safetensors = false, const ModelFolder* folder = nullptr);

    // Inode numbers encode the node, so no table is needed: 1 root, 2..6 fixed entries, then 8 per tensor; side
    // files, source/'s folders and its files in ranges of their own far above.
    static std::uint64_t inode_of(Node node);
    std::optional<Node> node_of(std::uint64_t inode) const;

    std::optional<Node> lookup(Node parent, std::string_view name) const;
    Node parent_of(Node node) const;

    std::size_t child_count(Node directory) const;
    // The `index`-th child of a directory (stable order: fixed entries first, then tensors in catalog order).
    DirEntry child(Node directory, std::size_t index) const;

    std::string_view directory_name(std::uint32_t tensor) const;
    // The side files and source/ the tree shows; nullptr when it shows none.
    const ModelFolder* folder() const { return folder_; }
    std::size_t tensor_count() const { return catalog_.tensors.size(); }

    // Tensors without values (dtypes without a float32 conversion, quantized weights whose parts do not fit) have no
    // dequant files.
    bool has_dequant(std::uint32_t tensor) const { return catalog_.tensors[tensor].has_values(); }

private:
    // A folder of source/: where it is and what it holds.
    struct SourceFolderNode {
        std::uint32_t parent = 0;  // the folder that holds it (source/ itself: 0, held by the root)
        std::vector<DirEntry> children;
    };

    std::optional<std::uint32_t> tensor_of_directory(std::string_view name) const;
    void add_folder_files(const ModelFolder& folder);

    const Catalog& catalog_;  // outlives the tree
    const ModelFolder* folder_;  // outlives the tree; may be nullptr
    std::vector<DirEntry> root_entries_;   // the root's own entries, before the tensors
    // The directory names that are not the tensor's own name (escaped or cut), by tensor: most tensors have none,
    // so a tree of a million tensors holds no second copy of their names.
    std::unordered_map<std::uint32_t, std::string> renamed_;
    // Tensors by directory name: an open-addressing table of tensor numbers, hashed by name, at most half full
    // (8 bytes a tensor where a node-based map took about 50).
    std::vector<std::uint32_t> slots_;
    std::vector<SourceFolderNode> source_folders_;     // [0] is source/; empty without a folder
    std::vector<std::uint32_t> source_file_folders_;   // by source file: the folder that holds it
    std::size_t side_file_count_ = 0;
};

}  // namespace tensorfs
