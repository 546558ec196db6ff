// A SOURCE opened for the Python module, as a mount would open it: its catalog, the files besides it, the files'
// readers, and copy-on-write mappings of its local files for arrays that need no copy. Immutable once made (the
// mappings are made when first asked, under a lock), so any number of threads may read through it at once.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "read_settings.hpp"
#include "tensorfs/catalog.hpp"
#include "tensorfs/model_folder.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs::python {

class OpenedModel {
public:
    // Opens `source` (throws InvalidSource as `tensorfs ls` would refuse it; a folder of several models without
    // model= is refused with the candidates). Call without the GIL: it reads headers and may wait for a network.
    OpenedModel(const std::string& source, const ReadSettings& settings);
    OpenedModel(const OpenedModel&) = delete;
    OpenedModel& operator=(const OpenedModel&) = delete;

    const std::string& source() const { return source_; }
    const Catalog& catalog() const { return catalog_; }
    const ModelFolder& folder() const { return folder_; }
    const SourceFiles& files() const { return *files_; }
    const Tree& tree() const { return *tree_; }
    // Threads that fetch and decode at once: threads=, else one per core, and for a remote source at least as many
    // as its max_connections, so that every connection has a reader.
    unsigned threads() const { return threads_; }

    // The catalog index of the tensor named `name`, or nullopt.
    std::optional<std::uint32_t> find(const std::string& name) const;

    // A copy-on-write mapping of catalog file `file` (made at the first call), or nullptr when it is no local file.
    std::shared_ptr<char> mapping(std::uint32_t file) const;

private:
    std::string source_;
    Catalog catalog_;
    ModelFolder folder_;
    std::unique_ptr<SourceFiles> files_;
    std::unique_ptr<Tree> tree_;
    unsigned threads_;
    std::unordered_map<std::string_view, std::uint32_t> by_name_;
    mutable std::mutex mappings_mutex_;
    mutable std::vector<std::optional<std::shared_ptr<char>>> mappings_;  // per catalog file; nullopt: not asked yet
};

}  // namespace tensorfs::python
