// SOURCE dispatch: which parser reads what, as the contract's "Sources that can be mounted" table says. A SOURCE
// names a folder, or a file in a folder; the parsers open the files they need through that folder, wherever it
// lives.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "format/formats.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/local_folder.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/remote_source.hpp"

namespace tensorfs {
namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

[[noreturn]] void refuse(const std::string& file, const std::string& what) {
    Problems problems;
    problems.add(file, what);
    problems.throw_if_any();
    throw InvalidSource({});  // unreachable: throw_if_any threw
}

// The names in `names` that end with `suffix`, in order.
std::vector<std::string> ending_with(const std::vector<std::string>& names, std::string_view suffix) {
    std::vector<std::string> found;
    std::copy_if(names.begin(), names.end(), std::back_inserter(found),
                 [&](const std::string& name) { return ends_with(name, suffix); });
    return found;
}

// The PyTorch checkpoints among `names`: *.bin, *.pt, *.pth.
std::vector<std::string> pytorch_checkpoints(const std::vector<std::string>& names) {
    std::vector<std::string> found;
    std::copy_if(names.begin(), names.end(), std::back_inserter(found), [](const std::string& name) {
        return ends_with(name, ".bin") || ends_with(name, ".pt") || ends_with(name, ".pth");
    });
    return found;
}

ResolvedSource resolve_local(const std::string& source) {
    const fs::path path(source);
    std::error_code error;
    const auto status = fs::status(path, error);
    if (error || !fs::exists(status)) refuse(source, "no such file or folder");
    if (fs::is_directory(status)) return {std::make_unique<LocalFolder>(path), {}};
    if (!fs::is_regular_file(status)) refuse(source, "not a regular file or folder");
    return {std::make_unique<LocalFolder>(path.parent_path()), path.filename().string()};
}

Catalog open_folder(const SourceFolder& folder) {
    const std::string name = folder.name();
    const auto names = folder.list();
    const auto indexes = ending_with(names, ".safetensors.index.json");
    if (indexes.size() == 1) return open_safetensors_index(folder, indexes.front());
    if (indexes.size() > 1) {
        refuse(name, "folder holds " + std::to_string(indexes.size()) +
                         " *.safetensors.index.json files; name the one to mount");
    }
    const auto shards = ending_with(names, ".safetensors");
    if (!shards.empty()) return open_safetensors_files(folder, shards);
    const auto pytorch_indexes = ending_with(names, ".bin.index.json");
    if (pytorch_indexes.size() == 1) return open_pytorch_index(folder, pytorch_indexes.front());
    if (pytorch_indexes.size() > 1) {
        refuse(name, "folder holds " + std::to_string(pytorch_indexes.size()) +
                         " *.bin.index.json files; name the one to mount");
    }
    const auto checkpoints = pytorch_checkpoints(names);
    if (!checkpoints.empty()) return open_pytorch_files(folder, checkpoints);
    const auto ggufs = ending_with(names, ".gguf");
    if (!ggufs.empty()) {
        // A folder of one GGUF model: one file or the parts of one split set (open_gguf finds the siblings
        // and refuses parts that do not belong together).
        Catalog catalog = open_gguf(folder, ggufs.front());
        if (catalog.files.size() != ggufs.size()) {
            refuse(name, "folder holds " + std::to_string(ggufs.size()) +
                             " GGUF files that are not one split model; name the file to mount");
        }
        return catalog;
    }
    refuse(name, "folder holds no *.safetensors, *.safetensors.index.json, *.bin.index.json, *.bin, *.pt, *.pth or "
                 "*.gguf file");
}

Catalog open_file(const SourceFolder& folder, const std::string& file) {
    if (ends_with(file, ".safetensors.index.json")) return open_safetensors_index(folder, file);
    if (ends_with(file, ".bin.index.json")) return open_pytorch_index(folder, file);
    if (ends_with(file, ".gguf")) return open_gguf(folder, file);
    if (ends_with(file, ".safetensors")) return open_safetensors_files(folder, {file});
    if (!pytorch_checkpoints({file}).empty()) return open_pytorch_files(folder, {file});
    refuse(folder.name_of(file),
           "unknown kind of source: expected *.safetensors, *.safetensors.index.json, *.gguf, *.bin, *.pt, *.pth, "
           "*.bin.index.json or a folder");
}

}  // namespace

Catalog open_catalog(const std::string& source, const SourceOptions& options) {
    const ResolvedSource resolved = is_remote_source(source) ? resolve_remote(source, options) : resolve_local(source);
    return resolved.file.empty() ? open_folder(*resolved.folder) : open_file(*resolved.folder, resolved.file);
}

}  // namespace tensorfs
