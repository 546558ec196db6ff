// SOURCE dispatch: which parser reads what, as the contract's "Sources that can be mounted" table says. A SOURCE
// names a folder, or a file in a folder; the parsers open the files they need through that folder, wherever it
// lives.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "format/formats.hpp"
#include "tensorfs/errors.hpp"
#include "model_candidates.hpp"
#include "tensorfs/local_folder.hpp"
#include "tensorfs/model_folder.hpp"
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

ResolvedSource resolve_local(const std::string& source) {
    const fs::path path(source);
    std::error_code error;
    const auto status = fs::status(path, error);
    if (error || !fs::exists(status)) {
        Problems problems;
        problems.add_missing(source, "no such file or folder");
        problems.throw_if_any();
    }
    if (fs::is_directory(status)) return {std::make_unique<LocalFolder>(path), {}};
    if (!fs::is_regular_file(status)) refuse(source, "not a regular file or folder");
    return {std::make_unique<LocalFolder>(path.parent_path()), path.filename().string()};
}

// The folder rule, over `names`, the files directly in `folder`.
Catalog open_folder(const SourceFolder& folder, const std::vector<std::string>& names) {
    const std::string name = folder.name();
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

// What `-o model=PATH` may name: a file inside the folder.
void check_model_path(const std::string& source, const std::string& model) {
    if (!is_plain_relative_path(model)) {
        refuse(source, "model=" + model + " is not a path inside the folder (no leading '/', no '..')");
    }
}

ResolvedSource resolve(const std::string& source, const SourceOptions& options) {
    return is_remote_source(source) ? resolve_remote(source, options) : resolve_local(source);
}

}  // namespace

Catalog open_catalog(const std::string& source, const SourceOptions& options) {
    const ResolvedSource resolved = resolve(source, options);
    if (!resolved.file.empty()) return open_file(*resolved.folder, resolved.file);
    return open_folder(*resolved.folder, resolved.folder->list());
}

OpenedSource open_source(const std::string& source, const std::string& model, const SourceOptions& options) {
    const ResolvedSource resolved = resolve(source, options);
    const SourceFolder& folder = *resolved.folder;
    OpenedSource opened;
    if (!resolved.file.empty()) {
        if (!model.empty()) refuse(source, "names a file already: model=" + model + " is for a folder SOURCE");
        opened.catalog = open_file(folder, resolved.file);
        opened.folder = files_of_file(folder, resolved.file, *opened.catalog);
        return opened;
    }
    if (!model.empty()) {
        check_model_path(source, model);
        opened.catalog = open_file(folder, model);
    } else {
        const auto names = folder.list();
        auto models = models_in(names);
        if (models.size() > 1) {
            opened.folder = files_of_folder(folder, nullptr);
            opened.folder.models = std::move(models);
            return opened;
        }
        opened.catalog = open_folder(folder, names);
    }
    opened.folder = files_of_folder(folder, &*opened.catalog);
    return opened;
}

}  // namespace tensorfs
