#include "tensorfs/model_folder.hpp"

#include <algorithm>
#include <array>
#include <map>

#include "tensorfs/errors.hpp"
#include "tensorfs/in_parallel.hpp"

namespace tensorfs {
namespace {

constexpr std::array<std::string_view, 7> kWeightSuffixes{
    ".safetensors", ".safetensors.index.json", ".bin", ".bin.index.json", ".pt", ".pth", ".gguf",
};

// The names of the root's own entries (tree.cpp): a file of the folder named like one is no side file; it stays in
// source/.
constexpr std::array<std::string_view, 4> kRootEntryNames{"model.json", "model.safetensors", ".tensorfs", "source"};

// The files of the usual model folder that a framework or llama.cpp reads besides the weights.
const std::vector<std::string> kProbedSideFiles{
    "config.json",           "generation_config.json", "tokenizer.json", "tokenizer_config.json",
    "special_tokens_map.json", "tokenizer.model",      "vocab.json",     "merges.txt",
    "chat_template.jinja",
};

// A file of the folder that could not be opened at mount: no bytes, and every read fails with the reason.
class UnopenedFile final : public SourceObject {
public:
    UnopenedFile(std::string name, std::string reason, ErrorKind kind)
        : SourceObject(std::move(name), 0, timespec{}), reason_(std::move(reason)), kind_(kind) {}

    void read(std::uint64_t, std::size_t, void*) const override { throw IoError(name(), reason_, kind_); }
    std::uint64_t fill_cache(std::uint64_t, std::uint64_t, const Progress&) const override {
        throw IoError(name(), reason_, kind_);
    }

private:
    std::string reason_;
    ErrorKind kind_;
};

// The objects the catalog opened and the files looked up already, by their path in the folder.
LookedUpFiles opened_by(const Catalog* catalog, const LookedUpFiles& looked_up) {
    LookedUpFiles opened = looked_up;
    if (catalog == nullptr) return opened;
    for (const auto& file : catalog->files) opened.emplace(file.display, file.object);
    return opened;
}

// `paths` of `folder`, opened in parallel (those in `opened` taken from there, a null one as missing). A file that
// vanished since it was listed is left out; one that cannot be opened (no permission, a server that refuses it) is
// kept with its problem:
// these files come with the model, and one of them must not keep the model from mounting.
std::vector<FolderFile> open_all(const SourceFolder& folder, const std::vector<std::string>& paths,
                                 const LookedUpFiles& opened) {
    std::vector<FolderFile> files(paths.size());
    in_parallel(paths.size(), folder.parallel_reads(), [&](std::size_t i) {
        files[i].path = paths[i];
        if (const auto found = opened.find(paths[i]); found != opened.end()) {
            files[i].object = found->second;
            return;
        }
        try {
            files[i].object = folder.open_if_exists(paths[i]);
        } catch (const SourceError& refused) {
            files[i].problem = refused.problems().empty() ? "cannot be opened" : refused.problems().front().what;
            files[i].object =
                std::make_shared<UnopenedFile>(folder.name_of(paths[i]), files[i].problem, refused.kind());
        }
    });
    std::erase_if(files, [](const FolderFile& file) { return file.object == nullptr; });
    return files;
}

bool is_top_level(const std::string& path) { return path.find('/') == std::string::npos; }

bool is_side_file(const std::string& path) {
    return is_top_level(path) && !is_weight_file(path) &&
           std::find(kRootEntryNames.begin(), kRootEntryNames.end(), path) == kRootEntryNames.end();
}

}  // namespace

std::vector<const FolderFile*> unopened_files(const ModelFolder& folder) {
    std::vector<const FolderFile*> found;
    for (const auto* files : {&folder.source_files, &folder.side_files}) {
        for (const FolderFile& file : *files) {
            const bool seen = std::any_of(found.begin(), found.end(),
                                          [&](const FolderFile* other) { return other->path == file.path; });
            if (!file.problem.empty() && !seen) found.push_back(&file);
        }
    }
    return found;
}

bool is_weight_file(std::string_view name) {
    return std::any_of(kWeightSuffixes.begin(), kWeightSuffixes.end(),
                       [&](std::string_view suffix) { return name.ends_with(suffix); });
}

std::vector<std::string> side_file_names(const std::vector<std::string>& listing) {
    std::vector<std::string> names;
    std::copy_if(listing.begin(), listing.end(), std::back_inserter(names), is_side_file);
    return names;
}

const std::vector<std::string>& probed_side_files() { return kProbedSideFiles; }

bool is_plain_relative_path(std::string_view path) {
    if (path.find('\0') != std::string_view::npos) return false;
    for (std::size_t start = 0; start <= path.size();) {
        std::size_t slash = path.find('/', start);
        if (slash == std::string_view::npos) slash = path.size();
        const std::string_view segment = path.substr(start, slash - start);
        if (segment.empty() || segment == "." || segment == "..") return false;
        start = slash + 1;
    }
    return true;
}

ModelFolder files_of_folder(const SourceFolder& folder, const Catalog* catalog, const LookedUpFiles& looked_up) {
    std::vector<std::string> listing = folder.list_all();
    // A store's keys may hold anything ("a//b", "../x"): only paths that name a file inside the folder.
    std::erase_if(listing, [](const std::string& path) { return !is_plain_relative_path(path); });
    ModelFolder model_folder;
    model_folder.source_files = open_all(folder, listing, opened_by(catalog, looked_up));
    for (const auto& file : model_folder.source_files) {
        if (is_side_file(file.path)) model_folder.side_files.push_back(file);
    }
    return model_folder;
}

ModelFolder files_of_file(const SourceFolder& folder, const std::string& file, const Catalog& catalog,
                          const LookedUpFiles& looked_up) {
    std::vector<std::string> weights{file};
    for (const auto& opened : catalog.files) weights.push_back(opened.display);
    std::sort(weights.begin(), weights.end());
    weights.erase(std::unique(weights.begin(), weights.end()), weights.end());
    ModelFolder model_folder;
    model_folder.source_files = open_all(folder, weights, opened_by(&catalog, {}));
    model_folder.side_files = open_all(folder, kProbedSideFiles, looked_up);
    std::sort(model_folder.side_files.begin(), model_folder.side_files.end(),
              [](const FolderFile& a, const FolderFile& b) { return a.path < b.path; });
    return model_folder;
}

}  // namespace tensorfs
