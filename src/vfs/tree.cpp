#include "tensorfs/tree.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <functional>
#include <map>

#include "tensorfs/errors.hpp"
#include "tensorfs/names.hpp"

namespace tensorfs {
namespace {

constexpr std::uint64_t kRootInode = 1;  // FUSE_ROOT_ID
constexpr std::uint64_t kModelJsonInode = 2;
constexpr std::uint64_t kStatsDirInode = 3;
constexpr std::uint64_t kStatsJsonInode = 4;
constexpr std::uint64_t kModelSafetensorsInode = 5;
constexpr std::uint64_t kMetricsInode = 6;
constexpr std::uint64_t kFirstTensorInode = 8;
constexpr std::uint64_t kInodesPerTensor = 8;
// Far above the last tensor's (at most 8 + 2^32 * 8): side files, source/'s folders, source/'s files.
constexpr std::uint64_t kFirstSideFileInode = std::uint64_t{1} << 60;
constexpr std::uint64_t kFirstSourceFolderInode = std::uint64_t{2} << 60;
constexpr std::uint64_t kFirstSourceFileInode = std::uint64_t{3} << 60;

constexpr std::string_view kModelJsonName = "model.json";
constexpr std::string_view kModelSafetensorsName = "model.safetensors";
constexpr std::string_view kStatsDirName = ".tensorfs";
constexpr std::string_view kStatsJsonName = "stats.json";
constexpr std::string_view kMetricsName = "metrics";
constexpr std::string_view kSourceName = "source";

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
    TensorFile{"dequant.bf16", NodeKind::DequantBf16, 5},
    TensorFile{"dequant.f16", NodeKind::DequantF16, 6},
};
constexpr std::size_t kFilesWithoutDequant = 2;  // raw, meta.json

constexpr std::uint32_t kFreeSlot = UINT32_MAX;

}  // namespace

Tree::Tree(const Catalog& catalog, bool model_safetensors, const ModelFolder* folder)
    : catalog_(catalog), folder_(folder) {
    root_entries_.push_back({kModelJsonName, Node{NodeKind::ModelJson}});
    if (model_safetensors) root_entries_.push_back({kModelSafetensorsName, Node{NodeKind::ModelSafetensors}});
    root_entries_.push_back({kStatsDirName, Node{NodeKind::StatsDir}});
    if (folder != nullptr) add_folder_files(*folder);
    // A tensor named like a side file is escaped as one named like model.json is, so that both stay reachable.
    std::vector<std::string_view> side_names;
    for (std::size_t i = root_entries_.size() - side_file_count_; i < root_entries_.size(); ++i) {
        side_names.push_back(root_entries_[i].name);
    }
    Problems problems;
    for (std::uint32_t i = 0; i < catalog.tensors.size(); ++i) {
        const Tensor& tensor = catalog.tensors[i];
        if (tensor.name.empty()) problems.add(catalog.files[tensor.file].display, "a tensor has an empty name");
        if (!is_own_directory_name(tensor.name, side_names)) {
            renamed_.emplace(i, directory_name_for(tensor.name, side_names));
        }
    }
    slots_.assign(std::bit_ceil(std::max<std::size_t>(2 * catalog.tensors.size(), 2)), kFreeSlot);
    const std::size_t mask = slots_.size() - 1;
    for (std::uint32_t i = 0; i < catalog.tensors.size(); ++i) {
        const std::string_view name = directory_name(i);
        std::size_t slot = std::hash<std::string_view>()(name) & mask;
        while (slots_[slot] != kFreeSlot && directory_name(slots_[slot]) != name) slot = (slot + 1) & mask;
        if (slots_[slot] == kFreeSlot) {
            slots_[slot] = i;
            continue;
        }
        problems.add(catalog.files[catalog.tensors[i].file].display,
                     "tensors '" + catalog.tensors[slots_[slot]].name + "' and '" + catalog.tensors[i].name +
                         "' would share the directory name '" + std::string(name) + "'");
    }
    problems.throw_if_any();
}

void Tree::add_folder_files(const ModelFolder& folder) {
    root_entries_.push_back({kSourceName, Node{NodeKind::SourceDir, 0}});
    // No side file is named like the root's own entries (model_folder.hpp): such a file is in source/ only.
    for (std::uint32_t i = 0; i < folder.side_files.size(); ++i) {
        root_entries_.push_back({folder.side_files[i].path, Node{NodeKind::SideFile, i}});
        ++side_file_count_;
    }
    source_folders_.emplace_back();
    source_file_folders_.assign(folder.source_files.size(), 0);
    // Every name in a folder once (a store may hold both the key "a" and keys under "a/": the first one listed
    // wins): by folder and name, the folder it names, or kFileEntry.
    constexpr std::uint32_t kFileEntry = UINT32_MAX;
    std::map<std::pair<std::uint32_t, std::string_view>, std::uint32_t> names;
    for (std::uint32_t i = 0; i < folder.source_files.size(); ++i) {
        const std::string_view path = folder.source_files[i].path;
        std::uint32_t parent = 0;
        std::size_t start = 0;
        for (std::size_t slash = 0; parent != kFileEntry && (slash = path.find('/', start)) != std::string_view::npos;
             start = slash + 1) {
            const std::string_view name = path.substr(start, slash - start);
            const auto next = static_cast<std::uint32_t>(source_folders_.size());
            const auto [entry, added] = names.emplace(std::pair{parent, name}, next);
            if (added) {
                source_folders_.push_back(SourceFolderNode{parent, {}});
                source_folders_[parent].children.push_back({name, Node{NodeKind::SourceDir, next}});
            }
            parent = entry->second;
        }
        const std::string_view name = path.substr(start);
        if (parent == kFileEntry || !names.emplace(std::pair{parent, name}, kFileEntry).second) continue;
        source_folders_[parent].children.push_back({name, Node{NodeKind::SourceFile, i}});
        source_file_folders_[i] = parent;
    }
}

std::string_view Tree::directory_name(std::uint32_t tensor) const {
    if (!renamed_.empty()) {
        const auto renamed = renamed_.find(tensor);
        if (renamed != renamed_.end()) return renamed->second;
    }
    return catalog_.tensors[tensor].name;
}

std::optional<std::uint32_t> Tree::tensor_of_directory(std::string_view name) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t slot = std::hash<std::string_view>()(name) & mask; slots_[slot] != kFreeSlot;
         slot = (slot + 1) & mask) {
        if (directory_name(slots_[slot]) == name) return slots_[slot];
    }
    return std::nullopt;
}

std::uint64_t Tree::inode_of(Node node) {
    const std::uint64_t tensor_base = kFirstTensorInode + std::uint64_t{node.tensor} * kInodesPerTensor;
    switch (node.kind) {
        case NodeKind::Root: return kRootInode;
        case NodeKind::ModelJson: return kModelJsonInode;
        case NodeKind::ModelSafetensors: return kModelSafetensorsInode;
        case NodeKind::StatsDir: return kStatsDirInode;
        case NodeKind::StatsJson: return kStatsJsonInode;
        case NodeKind::Metrics: return kMetricsInode;
        case NodeKind::TensorDir: return tensor_base;
        case NodeKind::SideFile: return kFirstSideFileInode + node.tensor;
        case NodeKind::SourceDir: return kFirstSourceFolderInode + node.tensor;
        case NodeKind::SourceFile: return kFirstSourceFileInode + node.tensor;
        default: break;
    }
    for (const auto& file : kTensorFiles) {
        if (file.kind == node.kind) return tensor_base + file.inode_offset;
    }
    return 0;
}

std::optional<Node> Tree::node_of(std::uint64_t inode) const {
    if (inode == kRootInode) return Node{NodeKind::Root};
    if (inode == kStatsJsonInode) return Node{NodeKind::StatsJson};
    if (inode == kMetricsInode) return Node{NodeKind::Metrics};
    for (const DirEntry& entry : root_entries_) {
        if (inode_of(entry.node) == inode) return entry.node;
    }
    if (inode >= kFirstSourceFileInode) {
        const std::uint64_t index = inode - kFirstSourceFileInode;
        if (index >= source_file_folders_.size()) return std::nullopt;
        return Node{NodeKind::SourceFile, static_cast<std::uint32_t>(index)};
    }
    if (inode >= kFirstSourceFolderInode) {
        const std::uint64_t index = inode - kFirstSourceFolderInode;
        if (index >= source_folders_.size()) return std::nullopt;
        return Node{NodeKind::SourceDir, static_cast<std::uint32_t>(index)};
    }
    if (inode >= kFirstSideFileInode) return std::nullopt;  // side files are root entries, found above
    if (inode < kFirstTensorInode) return std::nullopt;
    const std::uint64_t tensor = (inode - kFirstTensorInode) / kInodesPerTensor;
    const std::uint64_t offset = (inode - kFirstTensorInode) % kInodesPerTensor;
    if (tensor >= catalog_.tensors.size()) return std::nullopt;
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
            for (const DirEntry& entry : root_entries_) {
                if (entry.name == name) return entry.node;
            }
            const auto tensor = tensor_of_directory(name);
            if (!tensor) return std::nullopt;
            return Node{NodeKind::TensorDir, *tensor};
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
        case NodeKind::SourceDir:
            for (const DirEntry& entry : source_folders_[parent.tensor].children) {
                if (entry.name == name) return entry.node;
            }
            return std::nullopt;
        default: return std::nullopt;
    }
}

Node Tree::parent_of(Node node) const {
    switch (node.kind) {
        case NodeKind::Root:
        case NodeKind::ModelJson:
        case NodeKind::ModelSafetensors:
        case NodeKind::StatsDir:
        case NodeKind::SideFile:
        case NodeKind::TensorDir: return Node{NodeKind::Root};
        case NodeKind::SourceDir:
            if (node.tensor == 0) return Node{NodeKind::Root};
            return Node{NodeKind::SourceDir, source_folders_[node.tensor].parent};
        case NodeKind::SourceFile: return Node{NodeKind::SourceDir, source_file_folders_[node.tensor]};
        case NodeKind::StatsJson:
        case NodeKind::Metrics: return Node{NodeKind::StatsDir};
        default: return Node{NodeKind::TensorDir, node.tensor};
    }
}

std::size_t Tree::child_count(Node directory) const {
    switch (directory.kind) {
        case NodeKind::Root: return root_entries_.size() + catalog_.tensors.size();
        case NodeKind::StatsDir: return 2;
        case NodeKind::TensorDir: return has_dequant(directory.tensor) ? kTensorFiles.size() : kFilesWithoutDequant;
        case NodeKind::SourceDir: return source_folders_[directory.tensor].children.size();
        default: return 0;
    }
}

DirEntry Tree::child(Node directory, std::size_t index) const {
    switch (directory.kind) {
        case NodeKind::Root:
            if (index < root_entries_.size()) return root_entries_[index];
            {
                const auto tensor = static_cast<std::uint32_t>(index - root_entries_.size());
                return {directory_name(tensor), Node{NodeKind::TensorDir, tensor}};
            }
        case NodeKind::StatsDir:
            if (index == 0) return {kStatsJsonName, Node{NodeKind::StatsJson}};
            return {kMetricsName, Node{NodeKind::Metrics}};
        case NodeKind::SourceDir: return source_folders_[directory.tensor].children[index];
        default: return {kTensorFiles[index].name, Node{kTensorFiles[index].kind, directory.tensor}};
    }
}

}  // namespace tensorfs
