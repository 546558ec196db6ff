// SOURCE dispatch: which parser reads what, as the contract's "Sources that can be mounted" table says.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "formats.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/open_source.hpp"

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

// The regular files of `folder` whose names end with `suffix`, sorted by name.
std::vector<fs::path> files_ending_with(const fs::path& folder, std::string_view suffix) {
    std::vector<fs::path> found;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(folder, error)) {
        if (entry.is_regular_file(error) && ends_with(entry.path().filename().string(), suffix)) {
            found.push_back(entry.path());
        }
    }
    if (error) refuse(folder.string(), "cannot list folder: " + error.message());
    std::sort(found.begin(), found.end());
    return found;
}

Catalog open_folder(const fs::path& folder) {
    const auto indexes = files_ending_with(folder, ".safetensors.index.json");
    if (indexes.size() == 1) return open_safetensors_index(indexes.front());
    if (indexes.size() > 1) {
        refuse(folder.string(), "folder holds " + std::to_string(indexes.size()) +
                                    " *.safetensors.index.json files; name the one to mount");
    }
    const auto shards = files_ending_with(folder, ".safetensors");
    if (!shards.empty()) return open_safetensors_files(shards, folder);
    const auto ggufs = files_ending_with(folder, ".gguf");
    if (!ggufs.empty()) {
        // A folder of one GGUF model: one file or the parts of one split set (open_gguf finds the siblings
        // and refuses parts that do not belong together).
        Catalog catalog = open_gguf(ggufs.front());
        if (catalog.files.size() != ggufs.size()) {
            refuse(folder.string(), "folder holds " + std::to_string(ggufs.size()) +
                                        " GGUF files that are not one split model; name the file to mount");
        }
        return catalog;
    }
    refuse(folder.string(), "folder holds no *.safetensors, *.safetensors.index.json or *.gguf file");
}

}  // namespace

Catalog open_catalog(const std::string& source) {
    const fs::path path(source);
    std::error_code error;
    const auto status = fs::status(path, error);
    if (error || !fs::exists(status)) refuse(source, "no such file or folder");
    if (fs::is_directory(status)) return open_folder(path);
    if (!fs::is_regular_file(status)) refuse(source, "not a regular file or folder");
    if (ends_with(source, ".safetensors.index.json")) return open_safetensors_index(path);
    if (ends_with(source, ".gguf")) return open_gguf(path);
    if (ends_with(source, ".safetensors")) return open_safetensors_files({path}, path.parent_path());
    refuse(source, "unknown kind of source: expected *.safetensors, *.safetensors.index.json, *.gguf or a folder");
}

}  // namespace tensorfs
