#include "tensorfs/tree.hpp"

#include <array>

#include "tensorfs/errors.hpp"
#include "tensorfs/names.hpp"

namespace tensorfs {
namespace {

constexpr std::uint64_t kRootInode = 1;  // FUSE_ROOT_ID
constexpr std::uint64_t kModelJsonInode = 2;
constexpr std::uint64_t kStatsDirInode = 3;
constexpr std::uint64_t kStatsJsonInode = 4;
constexpr std::uint64_t kMetricsInode = 5;
constexpr std::uint64_t kFirstTensorInode = 8;
constexpr std::uint64_t kInodesPerTensor = 8;

constexpr std::string_view kModelJsonName = "model.json";
constexpr std::string_view kStatsDirName = ".tensorfs";
constexpr std::string_view kStatsJsonName = "stats.json";
constexpr std::string_view kMetricsName = "metrics";

struct TensorFile {
    std::string_view name;
    NodeKind kind;
    std::uint64_t inode_offset;  // from the tensor directory's inode
};
constexpr std::array kTensorFiles{
    TensorFile{"raw", NodeKind::Raw, 1},
    TensorFile{"meta.json", NodeKind::MetaJson, 2},
    TensorFile{"dequant.f32", NodeKind::DequantF32, 3},
    TensorFile{"dequant.npy", NodeKind::DequantNpy, 4},
};
constexpr std::size_t kFilesWithoutDequant = 2;  // raw, meta.json
constexpr std::size_t kRootFixedEntries = 2;     // model.json, .tensorfs

}  // namespace

Tree::Tree(const Catalog& catalog) {
    directory_names_.reserve(catalog.tensors.size());
    has_dequant_.reserve(catalog.tensors.size());
    tensor_by_directory_.reserve(catalog.tensors.size());
    Problems problems;
    for (const auto& tensor : catalog.tensors) {
        if (tensor.name.empty()) problems.add(catalog.files[tensor.file].display, "a tensor has an empty name");
        directory_names_.push_back(directory_name_for(tensor.name));
        has_dequant_.push_back(tensor.type->has_dequant());
    }
    for (std::uint32_t i = 0; i < directory_names_.size(); ++i) {
        const auto [it, inserted] = tensor_by_directory_.emplace(directory_names_[i], i);
        if (!inserted) {
            problems.add(catalog.files[catalog.tensors[i].file].display,
                         "tensors '" + catalog.tensors[it->second].name + "' and '" + catalog.tensors[i].name +
                             "' would share the directory name '" + directory_names_[i] + "'");
        }
    }
    problems.throw_if_any();
}

std::uint64_t Tree::inode_of(Node node) {
    const std::uint64_t tensor_base = kFirstTensorInode + std::uint64_t{node.tensor} * kInodesPerTensor;
    switch (node.kind) {
        case NodeKind::Root: return kRootInode;
        case NodeKind::ModelJson: return kModelJsonInode;
        case NodeKind::StatsDir: return kStatsDirInode;
        case NodeKind::StatsJson: return kStatsJsonInode;
        case NodeKind::Metrics: return kMetricsInode;
        case NodeKind::TensorDir: return tensor_base;
        default: break;
    }
    for (const auto& file : kTensorFiles) {
        if (file.kind == node.kind) return tensor_base + file.inode_offset;
    }
    return 0;
}

std::optional<Node> Tree::node_of(std::uint64_t inode) const {
    switch (inode) {
        case kRootInode: return Node{NodeKind::Root};
        case kModelJsonInode: return Node{NodeKind::ModelJson};
        case kStatsDirInode: return Node{NodeKind::StatsDir};
        case kStatsJsonInode: return Node{NodeKind::StatsJson};
        case kMetricsInode: return Node{NodeKind::Metrics};
        default: break;
    }
    if (inode < kFirstTensorInode) return std::nullopt;
    const std::uint64_t tensor = (inode - kFirstTensorInode) / kInodesPerTensor;
    const std::uint64_t offset = (inode - kFirstTensorInode) % kInodesPerTensor;
    if (tensor >= directory_names_.size()) return std::nullopt;
    const auto index = static_cast<std::uint32_t>(tensor);
    if (offset == 0) return Node{NodeKind::TensorDir, index};
    for (std::size_t i = 0; i < child_count(Node{NodeKind::TensorDir, index}); ++i) {
        if (kTensorFiles[i].inode_offset == offset) return Node{kTensorFiles[i].kind, index};
    }
    return std::nullopt;
}

std::optional<Node> Tree::lookup(Node parent, std::string_view name) const {
    switch (parent.kind) {
        case NodeKind::Root: {
            if (name == kModelJsonName) return Node{NodeKind::ModelJson};
            if (name == kStatsDirName) return Node{NodeKind::StatsDir};
            const auto it = tensor_by_directory_.find(name);
            if (it == tensor_by_directory_.end()) return std::nullopt;
            return Node{NodeKind::TensorDir, it->second};
        }
        case NodeKind::StatsDir:
            if (name == kStatsJsonName) return Node{NodeKind::StatsJson};
            if (name == kMetricsName) return Node{NodeKind::Metrics};
            return std::nullopt;
        case NodeKind::TensorDir:
            for (std::size_t i = 0; i < child_count(parent); ++i) {
                if (kTensorFiles[i].name == name) return Node{kTensorFiles[i].kind, parent.tensor};
            }
            return std::nullopt;
        default: return std::nullopt;
    }
}

Node Tree::parent_of(Node node) const {
    switch (node.kind) {
        case NodeKind::Root:
        case NodeKind::ModelJson:
        case NodeKind::StatsDir:
        case NodeKind::TensorDir: return Node{NodeKind::Root};
        case NodeKind::StatsJson:
        case NodeKind::Metrics: return Node{NodeKind::StatsDir};
        default: return Node{NodeKind::TensorDir, node.tensor};
    }
}

std::size_t Tree::child_count(Node directory) const {
    switch (directory.kind) {
        case NodeKind::Root: return kRootFixedEntries + directory_names_.size();
        case NodeKind::StatsDir: return 2;
        case NodeKind::TensorDir: return has_dequant_[directory.tensor] ? kTensorFiles.size() : kFilesWithoutDequant;
        default: return 0;
    }
}

DirEntry Tree::child(Node directory, std::size_t index) const {
    switch (directory.kind) {
        case NodeKind::Root:
            if (index == 0) return {kModelJsonName, Node{NodeKind::ModelJson}};
            if (index == 1) return {kStatsDirName, Node{NodeKind::StatsDir}};
            {
                const auto tensor = static_cast<std::uint32_t>(index - kRootFixedEntries);
                return {directory_names_[tensor], Node{NodeKind::TensorDir, tensor}};
            }
        case NodeKind::StatsDir:
            if (index == 0) return {kStatsJsonName, Node{NodeKind::StatsJson}};
            return {kMetricsName, Node{NodeKind::Metrics}};
        default: return {kTensorFiles[index].name, Node{kTensorFiles[index].kind, directory.tensor}};
    }
}

}  // namespace tensorfs
