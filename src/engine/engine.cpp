#include "tensorfs/engine.hpp"

#include <algorithm>
#include <thread>

#include "remote/remote_context.hpp"
#include "tensorfs/dequantized_config.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/json_files.hpp"
#include "tensorfs/model_figures.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/remote_source.hpp"
#include "tensorfs/suggestions.hpp"

namespace tensorfs {
namespace {

// How the source is reached: the settings' own, with where the remote layer counts and the share of the budget its
// fetched blocks take.
SourceOptions reach_of(const Settings& settings, const EngineNeeds& needs, Stats& stats) {
    SourceOptions options = settings.source;
    options.counters = stats.remote;
    options.memory_budget = settings.fetched_blocks_budget();
    options.disk_cache_writes_direct = needs.disk_cache_writes_direct;
    return options;
}

unsigned threads_of(const Settings& settings, bool remote) {
    if (settings.threads != 0) return settings.threads;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    return std::max(cores, remote ? settings.source.max_connections : 0u);
}

}  // namespace

Engine::Engine(std::string source, Settings settings, EngineNeeds needs)
    : source_(std::move(source)),
      settings_(std::move(settings)),
      remote_(is_remote_source(source_)),
      threads_(threads_of(settings_, remote_)) {
    location_ = locate_source(source_, reach_of(settings_, needs, stats_));
    ModelChoice choice = choose_model(location_, source_, settings_.model);
    if (choice.catalog) catalog_ = std::move(*choice.catalog);
    candidates_ = std::move(choice.candidates);
    looked_up_ = std::move(choice.looked_up);
    // The folder's files now when needed, else when first asked: a remote folder's side files cost requests.
    if (needs.folder) (void)folder();
    const bool has_model = candidates_.empty();
    if (needs.export_dtype && has_model) {
        model_export_ = std::make_unique<ModelExport>(catalog_, *needs.export_dtype);
        if (needs.mount_root) show_dequantized_config(*folder_, catalog_, *needs.export_dtype);
    }
    tree_ = std::make_unique<Tree>(catalog_, model_export_ && model_export_->available(),
                                   needs.folder ? folder_.get() : nullptr);
    files_ = std::make_unique<SourceFiles>(catalog_, needs.folder ? folder_.get() : nullptr);
    decoded_budget_ = needs.decoded_budget != 0 ? needs.decoded_budget : settings_.decoded_budget(remote_);
    mappings_.resize(catalog_.files.size());
}

Content& Engine::content() const {
    std::call_once(content_made_, [this] {
        content_ = std::make_unique<Content>(catalog_, *tree_, *files_, stats_, decoded_budget_, model_export_.get());
    });
    return *content_;
}

void Engine::require_model(std::string_view pick) const {
    if (!candidates_.empty()) throw_problem(shown_source(source_), several_models(pick));
}

std::string Engine::several_models(std::string_view pick) const { return tensorfs::several_models(candidates_, pick); }

nlohmann::ordered_json Engine::info() const {
    if (candidates_.empty()) return info_json(catalog_, *tree_, model_figures(catalog_));
    // model.json of a mount of the folder (it names the candidates and how to pick one), with the figures of no
    // tensors.
    ModelFolder models;
    models.models = candidates_;
    const Tree tree(catalog_, false, &models);
    return with_figures(model_meta(catalog_, tree), model_figures(catalog_));
}

std::optional<std::uint32_t> Engine::find(std::string_view name) const {
    for (std::uint32_t i = 0; i < catalog_.tensors.size(); ++i) {
        if (catalog_.tensors[i].name == name) return i;
    }
    const auto node = tree_->lookup(Node{NodeKind::Root, 0}, name);
    if (node && node->kind == NodeKind::TensorDir) return node->tensor;
    return std::nullopt;
}

std::string Engine::nearest_name(std::string_view name) const {
    std::vector<std::string_view> names;
    names.reserve(catalog_.tensors.size());
    for (const Tensor& tensor : catalog_.tensors) names.push_back(tensor.name);
    return nearest_tensor_name(name, names);
}

const ModelFolder& Engine::folder() const {
    std::call_once(folder_opened_, [this] {
        const Catalog* model = candidates_.empty() ? &catalog_ : nullptr;
        folder_ = std::make_unique<ModelFolder>(files_besides(location_, model, candidates_, looked_up_));
    });
    return *folder_;
}

std::uint64_t Engine::total_bytes() const {
    std::uint64_t total = 0;
    for (const auto& tensor : catalog_.tensors) total += tensor.nbytes;
    for (const auto& file : folder().source_files) total += file.object->size();
    return total;
}

timespec Engine::modified() const {
    if (!catalog_.files.empty()) return catalog_.files.front().object->modified();
    if (!folder().source_files.empty()) return folder().source_files.front().object->modified();
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return now;
}

std::optional<std::uint64_t> Engine::readahead_cut() const {
    if (!remote_) return std::nullopt;
    const std::uint64_t limit = remote::readahead_limit_of(reach_of(settings_, {}, stats_));
    if (limit >= settings_.source.readahead) return std::nullopt;
    return limit;
}

std::shared_ptr<char> Engine::mapping(std::uint32_t file) const {
    const std::lock_guard lock(mappings_mutex_);
    auto& mapping = mappings_[file];
    if (!mapping) mapping = catalog_.files[file].object->map_copy_on_write();
    return *mapping;
}

std::optional<Engine::MappedRead> Engine::mapped_read(Node node, std::uint64_t offset, std::size_t length) const {
    const auto slice = content().source_range(node, offset, length);
    if (!slice) return std::nullopt;
    const char* bytes = files_->mapped(slice->file, slice->offset, slice->length);
    if (bytes == nullptr) return std::nullopt;
    content().count_source_read(node, *slice);
    return MappedRead{bytes, slice->length, slice->file, slice->offset};
}

void Engine::done_with(const MappedRead& read) const { files_->forget_mapped(read.file, read.offset, read.length); }

std::optional<std::size_t> Engine::read_from_page_cache(Node node, std::uint64_t offset, std::size_t length,
                                                        char* dst) const {
    const auto slice = content().source_range(node, offset, length);
    if (!slice) return std::nullopt;
    if (slice->length > 0 && !files_->read_if_cached(slice->file, slice->offset, slice->length, dst)) {
        return std::nullopt;
    }
    content().count_source_read(node, *slice);
    return slice->length;
}

}  // namespace tensorfs
