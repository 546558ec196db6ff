#include "model_candidates.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "format/gguf_split.hpp"

namespace tensorfs {

std::vector<std::string> ending_with(const std::vector<std::string>& names, std::string_view suffix) {
    std::vector<std::string> found;
    std::copy_if(names.begin(), names.end(), std::back_inserter(found),
                 [&](const std::string& name) { return name.ends_with(suffix); });
    return found;
}

std::vector<std::string> pytorch_checkpoints(const std::vector<std::string>& names) {
    std::vector<std::string> found;
    std::copy_if(names.begin(), names.end(), std::back_inserter(found), [](const std::string& name) {
        return name.ends_with(".bin") || name.ends_with(".pt") || name.ends_with(".pth");
    });
    return found;
}

namespace {

// One candidate per index; else the files as one model (the folder rule's set of shards).
void add_family(std::vector<ModelCandidate>& models, const std::string& format, const std::vector<std::string>& indexes,
                const std::vector<std::string>& files) {
    for (const auto& index : indexes) models.push_back({index, format, {index}});
    if (indexes.empty() && !files.empty()) models.push_back({files.front(), format, files});
}

// GGUF files, one candidate per split set (by their names NAME-0000K-of-0000N.gguf; its path is its first part)
// and one per other file.
void add_ggufs(std::vector<ModelCandidate>& models, const std::vector<std::string>& ggufs) {
    std::map<std::tuple<std::string, std::uint64_t>, std::vector<std::string>> sets;
    for (const auto& name : ggufs) {
        const auto split = gguf::parse_split_name(name);
        if (split && split->count > 1) {
            sets[{split->prefix, split->count}].push_back(name);
        } else {
            models.push_back({name, "gguf", {name}});
        }
    }
    for (auto& [key, parts] : sets) models.push_back({parts.front(), "gguf", std::move(parts)});
}

}  // namespace

std::vector<ModelCandidate> models_in(const std::vector<std::string>& names) {
    std::vector<ModelCandidate> models;
    // safetensors before PyTorch, as the folder rule has it: a Hub repo often holds a model in both forms.
    const auto safetensors = ending_with(names, ".safetensors");
    if (!safetensors.empty() || !ending_with(names, ".safetensors.index.json").empty()) {
        add_family(models, "safetensors", ending_with(names, ".safetensors.index.json"), safetensors);
    } else {
        add_family(models, "pytorch", ending_with(names, ".bin.index.json"), pytorch_checkpoints(names));
    }
    add_ggufs(models, ending_with(names, ".gguf"));
    if (models.size() <= 1) return models;
    // Several: a set of shards without an index cannot be named by one path, so each of its files is a candidate.
    std::vector<ModelCandidate> named;
    for (auto& model : models) {
        if (model.format == "gguf" || model.files.size() == 1) {
            named.push_back(std::move(model));
            continue;
        }
        for (const auto& file : model.files) named.push_back({file, model.format, {file}});
    }
    std::sort(named.begin(), named.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    return named;
}

}  // namespace tensorfs
