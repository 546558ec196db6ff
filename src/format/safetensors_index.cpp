// A `*.safetensors.index.json` as transformers and diffusers write it:
//   {"metadata": {"total_size": 123, ...}, "weight_map": {"tensor name": "shard file", ...}}
// Shard paths are relative to the index's folder. The index and its shards must agree exactly: every tensor
// of a shard is named by the index, in that shard, and every tensor the index names is in its shard.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <system_error>

#include "formats.hpp"
#include "safetensors_assembly.hpp"
#include "safetensors_header.hpp"
#include "safetensors_json.hpp"

namespace tensorfs {
namespace fs = std::filesystem;

namespace {

// Real indexes are a few MiB at most; the same cap as a safetensors header.
constexpr std::uint64_t kMaxIndexBytes = 100'000'000;

struct Index {
    nlohmann::json metadata = nlohmann::json::object();
    std::map<std::string, std::string> shard_of_tensor;  // tensor name -> shard path, lexically normal
};

// The whole index file, after checking its size; nullopt (with a problem) when it cannot be read.
std::optional<std::string> read_small_file(const std::string& path, Problems& problems) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        problems.add(path, "cannot open: " + std::string(std::strerror(errno)));
        return std::nullopt;
    }
    std::optional<std::string> text;
    struct stat status {};
    if (::fstat(fd, &status) != 0) {
        problems.add(path, "cannot stat: " + std::string(std::strerror(errno)));
    } else if (static_cast<std::uint64_t>(status.st_size) > kMaxIndexBytes) {
        problems.add(path, "index is " + std::to_string(status.st_size) + " bytes, over the limit of " +
                               std::to_string(kMaxIndexBytes));
    } else {
        text.emplace(static_cast<std::size_t>(status.st_size), '\0');
        std::size_t done = 0;
        while (done < text->size()) {
            const ssize_t got = ::pread(fd, text->data() + done, text->size() - done, static_cast<off_t>(done));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                problems.add(path, got == 0 ? std::string("the file ended early") : std::strerror(errno), done);
                text.reset();
                break;
            }
            done += static_cast<std::size_t>(got);
        }
    }
    ::close(fd);
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

std::optional<Index> read_index(const std::string& path, Problems& problems) {
    const auto text = read_small_file(path, problems);
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

Catalog open_safetensors_index(const fs::path& index_file) {
    Problems problems;
    const std::string index_path = index_file.string();
    const auto index = read_index(index_path, problems);
    if (!index) {
        problems.throw_if_any();
        return Catalog{};  // unreachable: read_index gives nullopt only with a problem
    }

    safetensors::CatalogAssembly assembly(problems);
    assembly.add_metadata(index->metadata);
    std::set<std::string> shards;  // sorted, as a folder listing of the same shards would be
    for (const auto& [name, shard] : index->shard_of_tensor) shards.insert(shard);
    std::set<std::string> readable_shards;
    for (const auto& shard : shards) {
        const std::string path = (index_file.parent_path() / shard).string();
        std::error_code error;
        if (!fs::is_regular_file(path, error)) {
            problems.add(index_path, "weight_map names shard " + safetensors::json_quoted(shard) +
                                         ", which is not a file (" + path + ")");
            continue;
        }
        if (auto header = safetensors::read_header(path, problems)) {
            const std::uint64_t size = header->file_size;
            assembly.add_file(SourceFile{path, shard, size}, std::move(*header));
            readable_shards.insert(shard);
        }
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
