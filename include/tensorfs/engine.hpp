// The engine's front door: one SOURCE opened with its settings, holding everything a front end reads it through
// (its model's catalog, the files besides it, model.safetensors, the tree, the source's files and their content,
// the counters), and the reads a front end needs, the shortcuts of the FUSE replies among them. A mount, `cat`,
// `convert`, `ls`, `info`, `validate`, `diff`, `prefetch` and the Python module each make one; a new front end is
// an adapter of what it receives to this.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/content.hpp"
#include "tensorfs/model_export.hpp"
#include "tensorfs/model_folder.hpp"
#include "tensorfs/settings.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/stats.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs {

// What a front end needs beyond the source's model.
struct EngineNeeds {
    // The files besides the model (side files and source/): a mount, `ls --files`, `convert`'s check of its OUT.
    // Without them, folder() opens them when first asked (Python's files()).
    bool folder = false;
    // model.safetensors, laid out in this dtype: a mount (export_dtype=), `convert`, `info`.
    std::optional<ExportDtype> export_dtype;
    // What the root of a mount shows: with a dequantized export, config.json without its quantization_config.
    bool mount_root = false;
    // Bytes of decoded values kept (Content's budget); 0: the settings' share of the budget.
    std::uint64_t decoded_budget = 0;
    // Whole blocks go to the disk cache around the page cache: a reader that keeps what it read in memory of its
    // own (Python's arrays), where the cache file's pages would be a second copy.
    bool disk_cache_writes_direct = false;
};

class Engine {
public:
    // Opens `source` (a path, a URL, hf://, s3://) with `settings`, as a mount would. Throws SourceError as a
    // mount would refuse it. A folder that holds several models, none picked (model=), opens with no model: its
    // catalog is empty and candidates() lists them (require_model() refuses it, for the front ends that need one).
    // Call without holding anything others wait for: it reads headers and may wait for a network.
    Engine(std::string source, Settings settings, EngineNeeds needs = {});
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    const std::string& source() const { return source_; }
    const Settings& settings() const { return settings_; }
    bool remote() const { return remote_; }
    Stats& stats() const { return stats_; }

    const Catalog& catalog() const { return catalog_; }
    // The models of a folder that holds several, none picked; empty otherwise.
    const std::vector<ModelCandidate>& candidates() const { return candidates_; }
    // Throws SourceError naming the candidates and how to pick one (`pick`: "--model PATH", "model=PATH") when the
    // source is a folder of several models with none picked.
    void require_model(std::string_view pick) const;
    // The one message of a folder of several models: "holds N models (A, B); pick one with PICK, or name its file as
    // SOURCE".
    std::string several_models(std::string_view pick) const;

    // What `tensorfs info --json` prints: model.json (as a mount with the default options shows it) with the
    // figures of model_figures.hpp; for a folder of several models, the candidates and how to pick one.
    nlohmann::ordered_json info() const;

    // The tensor named `name` (or whose folder in the tree is named so); nullopt else.
    std::optional<std::uint32_t> find(std::string_view name) const;
    // The tensor name `name` most likely means ("token_embd" for "token_embd.weight"); "" when none is near.
    std::string nearest_name(std::string_view name) const;

    // The side files and source/ (opened at construction when needed, else at the first call).
    const ModelFolder& folder() const;
    // model.safetensors; nullptr when it was not asked for.
    const ModelExport* model_export() const { return model_export_.get(); }
    const Tree& tree() const { return *tree_; }
    const SourceFiles& files() const { return *files_; }
    // What every file of the tree holds (made at the first call: its decoding threads are of no use to a front end
    // that reads no values).
    Content& content() const;
    // Threads that fetch and decode at once for a whole-model read: threads=, else one per core, and for a remote
    // source at least as many as its max_connections, so that every connection has a reader.
    unsigned threads() const { return threads_; }
    // Bytes of every tensor and every file of source/: what a mount's file system holds.
    std::uint64_t total_bytes() const;
    // When the tree's own nodes last changed: the (first) model file's mtime, else the first source file's.
    timespec modified() const;

    // What the memory budget cuts readahead= to, when it does (a mount warns).
    std::optional<std::uint64_t> readahead_cut() const;

    // A copy-on-write mapping of catalog file `file` (made at the first call), or nullptr when it is no local file:
    // arrays over a file's bytes with no copy.
    std::shared_ptr<char> mapping(std::uint32_t file) const;

    // A read that a reply copies straight from a local file's mapping (the kernel copies the bytes from the page
    // cache into the reply): the bytes, counted as read. nullopt when the node's bytes are not a slice of a mapped
    // file. Tell done_with() once replied.
    struct MappedRead {
        const char* bytes;
        std::size_t length;
        std::uint32_t file;
        std::uint64_t offset;
    };
    std::optional<MappedRead> mapped_read(Node node, std::uint64_t offset, std::size_t length) const;
    void done_with(const MappedRead& read) const;
    // Copies a read of a node whose bytes are a slice of a source file into `dst` when every byte is in the page
    // cache already (no waiting for a disk or a network), and returns their count (counted as read); nullopt else.
    std::optional<std::size_t> read_from_page_cache(Node node, std::uint64_t offset, std::size_t length,
                                                    char* dst) const;

private:
    std::string source_;
    Settings settings_;
    bool remote_;
    mutable Stats stats_;
    SourceLocation location_;
    Catalog catalog_;
    std::vector<ModelCandidate> candidates_;
    LookedUpFiles looked_up_;
    mutable std::once_flag folder_opened_;
    mutable std::unique_ptr<ModelFolder> folder_;
    std::unique_ptr<ModelExport> model_export_;
    std::unique_ptr<Tree> tree_;
    std::unique_ptr<SourceFiles> files_;
    std::uint64_t decoded_budget_;
    mutable std::once_flag content_made_;
    mutable std::unique_ptr<Content> content_;
    unsigned threads_;
    mutable std::mutex mappings_mutex_;
    mutable std::vector<std::optional<std::shared_ptr<char>>> mappings_;  // per catalog file; nullopt: not asked yet
};

}  // namespace tensorfs
