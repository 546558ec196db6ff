// An index as transformers and diffusers write it for sharded models (`*.safetensors.index.json`,
// `pytorch_model.bin.index.json`):
//   {"metadata": {"total_size": 123, ...}, "weight_map": {"tensor name": "shard file", ...}}
// Shard paths are relative to the index's folder. The index and its shards must agree exactly: every tensor
// of a shard is named by the index, in that shard, and every tensor the index names is in its shard.
#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include "catalog_assembly.hpp"
#include "model_files.hpp"
#include "safetensors_fast_json.hpp"
#include "safetensors_json.hpp"
#include "shards.hpp"

namespace tensorfs {
namespace fs = std::filesystem;

namespace {

// Real indexes are a few MiB at most; the same cap as a safetensors header.
constexpr std::uint64_t kMaxIndexBytes = 100'000'000;

struct Index {
    nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
    std::vector<std::string> shards;  // the shard paths, lexically normal, sorted as a folder listing would be
    std::vector<std::pair<std::string, std::uint32_t>> shard_of_tensor;  // sorted by tensor name: index in shards

    // The entry of tensor `name`, or nullptr.
    const std::pair<std::string, std::uint32_t>* find(const std::string& name) const {
        const auto before = [](const auto& entry, const std::string& key) { return entry.first < key; };
        const auto found = std::lower_bound(shard_of_tensor.begin(), shard_of_tensor.end(), name, before);
        return found != shard_of_tensor.end() && found->first == name ? &*found : nullptr;
    }
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

// Puts the weight_map's entries with a string shard into an Index, in tensor name order, checking the names and
// shard paths.
class WeightMapReader {
public:
    WeightMapReader(Index& index, const std::string& path, Problems& problems)
        : index_(index), path_(path), problems_(problems) {}

    // False, with a problem, when the entry breaks a rule.
    bool add(std::string name, const std::string& shard) {
        bool sound = true;
        if (name.empty()) {
            problems_.add(path_, "weight_map names a tensor with an empty name");
            sound = false;
        }
        const auto id = shard_id(shard);
        if (!id) {
            problems_.add(path_, "weight_map puts tensor " + safetensors::json_quoted(name) + " in " +
                                     safetensors::json_quoted(shard) +
                                     ", which is not a file inside the index's folder");
            return false;
        }
        index_.shard_of_tensor.emplace_back(std::move(name), *id);
        return sound;
    }

    // Sorts the shards, once every entry is in.
    void finish() {
        std::vector<std::uint32_t> order(index_.shards.size());
        for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(),
                  [&](std::uint32_t a, std::uint32_t b) { return index_.shards[a] < index_.shards[b]; });
        std::vector<std::uint32_t> sorted_id(order.size());
        std::vector<std::string> sorted;
        for (std::uint32_t rank = 0; rank < order.size(); ++rank) {
            sorted_id[order[rank]] = rank;
            sorted.push_back(std::move(index_.shards[order[rank]]));
        }
        index_.shards = std::move(sorted);
        for (auto& entry : index_.shard_of_tensor) entry.second = sorted_id[entry.second];
    }

private:
    // The shard's place in index_.shards (its path made lexically normal); nullopt when it is not inside the index's
    // folder. Every tensor names one of a few shards: each is worked out once.
    std::optional<std::uint32_t> shard_id(const std::string& shard) {
        const auto known = id_of_shard_.find(shard);
        if (known != id_of_shard_.end()) return known->second;
        const fs::path shard_path(shard);
        std::optional<std::uint32_t> id;
        if (is_inside_folder(shard_path)) {
            const std::string normal = shard_path.lexically_normal().generic_string();
            const auto same = std::find(index_.shards.begin(), index_.shards.end(), normal);
            id = static_cast<std::uint32_t>(same - index_.shards.begin());
            if (same == index_.shards.end()) index_.shards.push_back(normal);
        }
        id_of_shard_.emplace(shard, id);
        return id;
    }

    Index& index_;
    const std::string& path_;
    Problems& problems_;
    std::unordered_map<std::string, std::optional<std::uint32_t>> id_of_shard_;
};

// The fast road: the same checks, on a weight_map that is an object of strings and metadata that is an object.
std::optional<Index> read_usual_index(safetensors::UsualIndex usual, const std::string& path, Problems& problems) {
    Index index;
    if (usual.metadata) index.metadata = std::move(*usual.metadata);
    index.shard_of_tensor.reserve(usual.weight_map.size());
    WeightMapReader weights(index, path, problems);
    bool sound = true;
    for (auto& [name, shard] : usual.weight_map) sound = weights.add(std::move(name), usual.shards[shard]) && sound;
    if (!sound) return std::nullopt;
    weights.finish();
    return index;
}

std::optional<Index> read_index(const SourceObject& file, Problems& problems) {
    const std::string& path = file.name();
    const auto text = read_small_file(file, problems);
    if (!text) return std::nullopt;
    if (const auto bad = safetensors::find_invalid_utf8(*text)) {
        problems.add(path, "index is not valid UTF-8", *bad);
        return std::nullopt;
    }
    if (auto usual = safetensors::read_usual_index(*text)) return read_usual_index(std::move(*usual), path, problems);
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
    WeightMapReader weights(index, path, problems);
    for (const auto& [name, shard] : weight_map->items()) {
        if (!shard.is_string()) {
            if (name.empty()) problems.add(path, "weight_map names a tensor with an empty name");
            problems.add(path, "weight_map gives tensor " + safetensors::json_quoted(name) + " the shard " +
                                   safetensors::brief(shard) + ", not a file name");
            sound = false;
            continue;
        }
        sound = weights.add(name, shard.get<std::string>()) && sound;
    }
    if (!sound) return std::nullopt;
    weights.finish();
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
    const std::vector<std::string>& shards = index->shards;
    // Shard names are relative to the index's own folder.
    const std::string index_folder = fs::path(index_name).parent_path().generic_string();
    std::vector<std::string> shard_names;
    for (const auto& shard : shards) shard_names.push_back(index_folder.empty() ? shard : index_folder + "/" + shard);
    std::vector<bool> readable(shards.size());
    auto read = read_shards(folder, shard_names, reader);
    for (std::size_t shard = 0; shard < read.size(); ++shard) {
        auto& opened = read[shard];
        // A shard that could not be opened has its own problem already (a server error, a refused token).
        if (opened.file == nullptr && opened.problems.empty()) {
            problems.add_missing(index_path, "weight_map names shard " + safetensors::json_quoted(shards[shard]) +
                                                 ", which is not a file (" + folder.name_of(opened.name) + ")");
        }
        problems.add_all(std::move(opened.problems));
        if (opened.contents) {
            const std::uint64_t size = opened.contents->file_size;
            assembly.add_file(SourceFile{opened.file->name(), shards[shard], size, opened.file},
                              std::move(*opened.contents));
            readable[shard] = true;
        }
    }

    const Catalog& catalog = assembly.catalog();
    std::vector<bool> in_catalog(index->shard_of_tensor.size());  // per index entry: a shard holds that tensor
    for (const auto& tensor : catalog.tensors) {
        const SourceFile& file = catalog.files[tensor.file];
        const auto* named = index->find(tensor.name);
        if (named == nullptr) {
            problems.add(file.path, "tensor " + safetensors::json_quoted(tensor.name) +
                                        " is not in the weight_map of " + index_path);
            continue;
        }
        in_catalog[named - index->shard_of_tensor.data()] = true;
        if (shards[named->second] != file.display) {
            problems.add(index_path, "weight_map puts tensor " + safetensors::json_quoted(tensor.name) + " in " +
                                         shards[named->second] + ", but it is in " + file.display);
        }
    }
    for (std::size_t i = 0; i < index->shard_of_tensor.size(); ++i) {
        const auto& [name, shard] = index->shard_of_tensor[i];
        if (readable[shard] && !in_catalog[i]) {
            problems.add(index_path, "weight_map puts tensor " + safetensors::json_quoted(name) + " in " +
                                         shards[shard] + ", which lacks it");
        }
    }
    problems.throw_if_any();
    return assembly.take();
}

}  // namespace tensorfs
