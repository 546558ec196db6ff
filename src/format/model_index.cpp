// An index as transformers and diffusers write it for sharded models (`*.safetensors.index.json`,
// `pytorch_model.bin.index.json`):
//   {"metadata": {"total_size": 123, ...}, "weight_map": {"tensor name": "shard file", ...}}
// Shard paths are relative to the index's folder. The index and its shards must agree exactly: every tensor
// of a shard is named by the index, in that shard, and every tensor the index names is in its shard.
#include <filesystem>
#include <map>
#include <set>

#include "catalog_assembly.hpp"
#include "model_files.hpp"
#include "safetensors_json.hpp"
#include "shards.hpp"

namespace tensorfs {
namespace fs = std::filesystem;

namespace {

// Real indexes are a few MiB at most; the same cap as a safetensors header.
constexpr std::uint64_t kMaxIndexBytes = 100'000'000;

struct Index {
    nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
    std::map<std::string, std::string> shard_of_tensor;  // tensor name -> shard path, lexically normal
};

// The whole index file, after checking its size; nullopt (with a problem) when it cannot be read.
std::optional<std::string> read_small_file(const SourceObject& file, Problems& problems) {
    if (file.size() > kMaxIndexBytes) {
        problems.add(file.name(), "index is " + std::to_string(file.size()) + " bytes, over the limit of " +
                                      std::to_string(kMaxIndexBytes));
        return std::nullopt;
    }
    std::string text(static_cast<std::size_t>(file.size()), '\0');
    try {
        file.read(0, text.size(), text.data());
    } catch (const IoError& error) {
        problems.add(file.name(), std::string("cannot read: ") + error.reason());
        return std::nullopt;
    }
    return text;
}

// A shard path must name a file inside the index's folder: relative, without "..", and without NUL (which would
// cut the name short when the file is opened).
bool is_inside_folder(const fs::path& shard) {
    if (shard.empty() || shard.is_absolute() || shard.native().find('\0') != std::string::npos) return false;
    for (const auto& part : shard) {
        if (part == "..") return false;
    }
    return true;
}

std::optional<Index> read_index(const SourceObject& file, Problems& problems) {
    const std::string& path = file.name();
    const auto text = read_small_file(file, problems);
    if (!text) return std::nullopt;
    if (const auto bad = safetensors::find_invalid_utf8(*text)) {
        problems.add(path, "index is not valid UTF-8", *bad);
        return std::nullopt;
    }
    auto parsed = safetensors::parse_json_refusing_duplicates(*text, "index", path, 0, problems);
    if (!parsed.value) return std::nullopt;
    const nlohmann::json& root = *parsed.value;
    if (!root.is_object()) {
        problems.add(path, "index is a JSON " + std::string(root.type_name()) + ", not an object", 0);
        return std::nullopt;
    }
    Index index;
    bool sound = !parsed.duplicate_keys;
    if (const auto metadata = root.find("metadata"); metadata != root.end() && !metadata->is_null()) {
        if (metadata->is_object()) {
            index.metadata = *metadata;  // any JSON values, e.g. total_size as a number
        } else {
            problems.add(path, "index metadata is a JSON " + std::string(metadata->type_name()) + ", not an object");
            sound = false;
        }
    }
    const auto weight_map = root.find("weight_map");
    if (weight_map == root.end() || !weight_map->is_object()) {
        problems.add(path, weight_map == root.end() ? std::string("index has no weight_map")
                                                    : "index weight_map is a JSON " +
                                                          std::string(weight_map->type_name()) + ", not an object");
        return std::nullopt;
    }
    if (weight_map->empty()) {
        // No shard at all: nothing to mount (and a catalog without files, which the mount cannot describe).
        problems.add(path, "index weight_map is empty: it names no tensor and no shard");
        return std::nullopt;
    }
    for (const auto& [name, shard] : weight_map->items()) {
        if (name.empty()) {
            problems.add(path, "weight_map names a tensor with an empty name");
            sound = false;
        }
        if (!shard.is_string()) {
            problems.add(path, "weight_map gives tensor " + safetensors::json_quoted(name) + " the shard " +
                                   safetensors::brief(shard) + ", not a file name");
            sound = false;
            continue;
        }
        const fs::path shard_path(shard.get<std::string>());
        if (!is_inside_folder(shard_path)) {
            problems.add(path, "weight_map puts tensor " + safetensors::json_quoted(name) + " in " +
                                   safetensors::json_quoted(shard.get<std::string>()) +
                                   ", which is not a file inside the index's folder");
            sound = false;
            continue;
        }
        index.shard_of_tensor.emplace(name, shard_path.lexically_normal().generic_string());
    }
    if (!sound) return std::nullopt;
    return index;
}

}  // namespace

Catalog open_model_index(const SourceFolder& folder, const std::string& index_name, const std::string& format,
                         const FileReader& reader) {
    Problems problems;
    const auto index_file = folder.open(index_name);
    const std::string& index_path = index_file->name();
    const auto index = read_index(*index_file, problems);
    if (!index) {
        problems.throw_if_any();
        return Catalog{};  // unreachable: read_index gives nullopt only with a problem
    }

    CatalogAssembly assembly(format, problems);
    assembly.add_metadata(index->metadata);
    std::set<std::string> shards;  // sorted, as a folder listing of the same shards would be
    for (const auto& [name, shard] : index->shard_of_tensor) shards.insert(shard);
    // Shard names are relative to the index's own folder.
    const std::string index_folder = fs::path(index_name).parent_path().generic_string();
    std::vector<std::string> shard_names;
    for (const auto& shard : shards) shard_names.push_back(index_folder.empty() ? shard : index_folder + "/" + shard);
    std::set<std::string> readable_shards;
    auto shard = shards.begin();
    for (auto& opened : read_shards(folder, shard_names, reader)) {
        // A shard that could not be opened has its own problem already (a server error, a refused token).
        if (opened.file == nullptr && opened.problems.empty()) {
            problems.add(index_path, "weight_map names shard " + safetensors::json_quoted(*shard) +
                                         ", which is not a file (" + folder.name_of(opened.name) + ")");
        }
        problems.add_all(std::move(opened.problems));
        if (opened.contents) {
            const std::uint64_t size = opened.contents->file_size;
            assembly.add_file(SourceFile{opened.file->name(), *shard, size, opened.file}, std::move(*opened.contents));
            readable_shards.insert(*shard);
        }
        ++shard;
    }

    const Catalog& catalog = assembly.catalog();
    for (const auto& tensor : catalog.tensors) {
        const SourceFile& file = catalog.files[tensor.file];
        const auto named = index->shard_of_tensor.find(tensor.name);
        if (named == index->shard_of_tensor.end()) {
            problems.add(file.path, "tensor " + safetensors::json_quoted(tensor.name) +
                                        " is not in the weight_map of " + index_path);
        } else if (named->second != file.display) {
            problems.add(index_path, "weight_map puts tensor " + safetensors::json_quoted(tensor.name) + " in " +
                                         named->second + ", but it is in " + file.display);
        }
    }
    for (const auto& [name, shard] : index->shard_of_tensor) {
        if (readable_shards.count(shard) != 0 && !assembly.file_of(name)) {
            problems.add(index_path, "weight_map puts tensor " + safetensors::json_quoted(name) + " in " + shard +
                                         ", which lacks it");
        }
    }
    problems.throw_if_any();
    return assembly.take();
}

}  // namespace tensorfs
