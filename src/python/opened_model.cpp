#include "opened_model.hpp"

#include <algorithm>
#include <thread>

#include "tensorfs/errors.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/remote_source.hpp"

namespace tensorfs::python {
namespace {

// The catalog of an opened source; a folder of several models (no catalog) is refused with the candidates, as a
// reader of tensors has nothing to show without one.
Catalog model_of(const std::string& source, OpenedSource& opened) {
    if (opened.catalog) return std::move(*opened.catalog);
    std::string candidates;
    for (const ModelCandidate& candidate : opened.folder.models) {
        candidates += (candidates.empty() ? "" : ", ") + candidate.path + " (" + candidate.format + ")";
    }
    Problems problems;
    problems.add(shown_source(source), "this folder holds " + std::to_string(opened.folder.models.size()) +
                                           " models: " + candidates + "; pick one with model=PATH (PATH relative "
                                           "to the folder), or name its file as the source");
    problems.throw_if_any();
    return {};  // unreachable: throw_if_any threw
}

SourceOptions source_options_of(const ReadSettings& settings) {
    SourceOptions options = settings.source_options;
    // As a mount shares its cache_size: half for fetched blocks in memory.
    options.memory_budget = settings.budget() / 2;
    // The arrays returned hold every byte read: the cache file's pages would be a second copy.
    options.disk_cache_writes_direct = true;
    return options;
}

}  // namespace

OpenedModel::OpenedModel(const std::string& source, const ReadSettings& settings) : source_(source) {
    OpenedSource opened = open_source(source, settings.model, source_options_of(settings));
    catalog_ = model_of(source, opened);
    folder_ = std::move(opened.folder);
    files_ = std::make_unique<SourceFiles>(catalog_, &folder_);
    // The tree `tensorfs ls` and `info` make: a name that cannot become a directory is refused as they refuse it.
    tree_ = std::make_unique<Tree>(catalog_);
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const unsigned connections = is_remote_source(source) ? settings.source_options.max_connections : 0;
    threads_ = settings.threads != 0 ? settings.threads : std::max(cores, connections);
    by_name_.reserve(catalog_.tensors.size());
    for (std::uint32_t i = 0; i < catalog_.tensors.size(); ++i) by_name_.emplace(catalog_.tensors[i].name, i);
    mappings_.resize(catalog_.files.size());
}

std::optional<std::uint32_t> OpenedModel::find(const std::string& name) const {
    const auto found = by_name_.find(name);
    if (found == by_name_.end()) return std::nullopt;
    return found->second;
}

std::shared_ptr<char> OpenedModel::mapping(std::uint32_t file) const {
    const std::lock_guard lock(mappings_mutex_);
    auto& mapping = mappings_[file];
    if (!mapping) mapping = catalog_.files[file].object->map_copy_on_write();
    return *mapping;
}

}  // namespace tensorfs::python
