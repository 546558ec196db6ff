// SOURCE dispatch: which parser reads what, as the contract's "Sources that can be mounted" table says. A SOURCE
// names a folder, or a file in a folder; the parsers open the files they need through that folder, wherever it
// lives.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "format/formats.hpp"
#include "tensorfs/errors.hpp"
#include "model_candidates.hpp"
#include "tensorfs/model_config.hpp"
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

SourceLocation resolve_local(const std::string& source) {
    const fs::path path(source);
    std::error_code error;
    const auto status = fs::status(path, error);
    if (error || !fs::exists(status)) {
        Problems problems;
        problems.add_missing(source, "no such file or folder");
        problems.throw_if_any();
    }
    if (fs::is_directory(status)) return {std::make_unique<LocalFolder>(path), {}};
    if (!fs::is_regular_file(status)) throw_problem(source, "not a regular file or folder");
    return {std::make_unique<LocalFolder>(path.parent_path()), path.filename().string()};
}

Catalog open_file(const SourceFolder& folder, const std::string& file) {
    if (ends_with(file, ".safetensors.index.json")) return open_safetensors_index(folder, file);
    if (ends_with(file, ".bin.index.json")) return open_pytorch_index(folder, file);
    if (ends_with(file, ".gguf")) return open_gguf(folder, file);
    if (ends_with(file, ".safetensors")) return open_safetensors_files(folder, {file});
    if (!pytorch_checkpoints({file}).empty()) return open_pytorch_files(folder, {file});
    throw_problem(
        folder.name_of(file),
        "unknown kind of source: expected *.safetensors, *.safetensors.index.json, *.gguf, *.bin, *.pt, *.pth, "
        "*.bin.index.json or a folder");
}

// The folder rule: the one model that models_in() found in `folder`, an index, a set of files, or a GGUF file or
// split set.
Catalog open_folder_model(const SourceFolder& folder, const ModelCandidate& model) {
    if (model.format == "gguf") {
        // open_gguf finds the parts by the first one's header and refuses parts that do not belong together.
        Catalog catalog = open_gguf(folder, model.path);
        if (catalog.files.size() != model.files.size()) {
            throw_problem(folder.name(), "folder holds " + std::to_string(model.files.size()) +
                                             " GGUF files that are not one split model; name the file to mount");
        }
        return catalog;
    }
    if (ends_with(model.path, ".index.json")) return open_file(folder, model.path);
    return model.format == "safetensors" ? open_safetensors_files(folder, model.files)
                                         : open_pytorch_files(folder, model.files);
}

// What `-o model=PATH` may name: a file inside the folder.
void check_model_path(const std::string& source, const std::string& model) {
    if (!is_plain_relative_path(model)) {
        throw_problem(source, "model=" + model + " is not a path inside the folder (no leading '/', no '..')");
    }
}

// The model `resolved` names: its file, the file `model` picks in a folder, or the folder's one model; none, and
// the candidates, for a folder of several models.
ModelChoice model_of(const SourceLocation& location, const std::string& source, const std::string& model) {
    const SourceFolder& folder = *location.folder;
    // `listed`: whether the folder's listing shows a config.json beside the model (a folder SOURCE's top files).
    const auto with_quantization = [&](Catalog catalog, const std::string& path, bool listed = false) {
        ModelChoice opened;
        find_quantization(catalog, folder, path, listed, opened.looked_up);
        opened.catalog = std::move(catalog);
        return opened;
    };
    if (!location.file.empty()) {
        if (!model.empty()) throw_problem(source, "names a file already: model=" + model + " is for a folder SOURCE");
        return with_quantization(open_file(folder, location.file), location.file);
    }
    if (!model.empty()) {
        check_model_path(source, model);
        return with_quantization(open_file(folder, model), model);
    }
    const std::vector<std::string> listing = folder.list();
    std::vector<ModelCandidate> models = models_in(listing);
    if (models.empty()) {
        throw_problem(folder.name(),
                      "folder holds no *.safetensors, *.safetensors.index.json, *.bin.index.json, *.bin, *.pt, "
                      "*.pth or *.gguf file");
    }
    if (models.size() > 1) return {std::nullopt, std::move(models), {}};
    const bool listed = std::find(listing.begin(), listing.end(), "config.json") != listing.end();
    return with_quantization(open_folder_model(folder, models.front()), models.front().path, listed);
}

}  // namespace

SourceLocation locate_source(const std::string& source, const SourceOptions& options) {
    return is_remote_source(source) ? resolve_remote(source, options) : resolve_local(source);
}

ModelChoice choose_model(const SourceLocation& location, const std::string& source, const std::string& model) {
    return model_of(location, source, model);
}

ModelFolder files_besides(const SourceLocation& location, const Catalog* catalog,
                          const std::vector<ModelCandidate>& candidates, const LookedUpFiles& looked_up) {
    if (!location.file.empty()) return files_of_file(*location.folder, location.file, *catalog, looked_up);
    ModelFolder folder = files_of_folder(*location.folder, catalog, looked_up);
    folder.models = candidates;
    return folder;
}

std::string several_models(const std::vector<ModelCandidate>& candidates, std::string_view pick) {
    std::string paths;
    for (const auto& candidate : candidates) paths += (paths.empty() ? "" : ", ") + candidate.path;
    return "holds " + std::to_string(candidates.size()) + " models (" + paths + "); pick one with " +
           std::string(pick) + ", or name its file as SOURCE";
}

Catalog open_catalog(const std::string& source, const SourceOptions& options) {
    ModelChoice choice = choose_model(locate_source(source, options), source, "");
    if (!choice.catalog) throw_problem(shown_source(source), several_models(choice.candidates, "--model PATH"));
    return std::move(*choice.catalog);
}

}  // namespace tensorfs
