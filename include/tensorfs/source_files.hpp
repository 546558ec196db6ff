// The files of a mount, by index: the objects the catalog's parsers opened (by their index in Catalog::files), read
// for tensors' bytes, then the side files and source/'s files of its ModelFolder. They stay open as long as the
// mount, so it keeps serving the bytes it was mounted with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/model_folder.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs {

class SourceFiles {
public:
    // `folder` may be nullptr (no side files, no source/).
    explicit SourceFiles(const Catalog& catalog, const ModelFolder* folder = nullptr);

    // The index of side file `side` and of source file `source` of the folder.
    std::uint32_t side_file(std::uint32_t side) const { return first_side_file_ + side; }
    std::uint32_t source_file(std::uint32_t source) const { return first_source_file_ + source; }

    const SourceObject& file(std::uint32_t index) const { return *files_[index]; }

    // Whether file `index` (a side file or a file of source/) could not be opened at mount: its reads all fail.
    bool unopened(std::uint32_t index) const { return index < unopened_.size() && unopened_[index]; }

    // Reads exactly `length` bytes at `offset` of file `file` into `dst`; throws IoError on a short read or error.
    void read_exact(std::uint32_t file, std::uint64_t offset, std::size_t length, void* dst) const {
        files_[file]->read(offset, length, dst);
    }

    // SourceObject::read_runs of file `file`: the parts of a tensor's rows that a slice selects.
    void read_runs(std::uint32_t file, std::span<const SourceObject::Run> runs) const { files_[file]->read_runs(runs); }

    // The same for bytes of `tensor`, at `offset` in its file, read as part of a reader's stream: a remote file
    // follows the stream and reads ahead of it (SourceObject::read_following).
    void read_of_tensor(const Tensor& tensor, std::uint64_t offset, std::size_t length, void* dst) const {
        files_[tensor.file]->read_following(offset, length, dst);
    }

    // The same for bytes of a file the tree shows whole (a side file, a file of source/).
    void read_of_file(std::uint32_t file, std::uint64_t offset, std::size_t length, void* dst) const {
        files_[file]->read_following(offset, length, dst);
    }

    // SourceObject::read_if_cached of file `file`.
    bool read_if_cached(std::uint32_t file, std::uint64_t offset, std::size_t length, void* dst) const {
        return files_[file]->read_if_cached(offset, length, dst);
    }

    // SourceObject::mapped and forget_mapped of file `file`.
    const char* mapped(std::uint32_t file, std::uint64_t offset, std::size_t length) const {
        return files_[file]->mapped(offset, length);
    }
    void forget_mapped(std::uint32_t file, std::uint64_t offset, std::size_t length) const {
        files_[file]->forget_mapped(offset, length);
    }

    // SourceObject::cached_span of file `file`.
    std::optional<SourceObject::FileSpan> cached_span(std::uint32_t file, std::uint64_t offset,
                                                      std::size_t length) const {
        return files_[file]->cached_span(offset, length);
    }

private:
    std::vector<const SourceObject*> files_;  // owned by the catalog and the folder
    std::vector<bool> unopened_;              // by index, as files_
    std::uint32_t first_side_file_ = 0;
    std::uint32_t first_source_file_ = 0;
};

}  // namespace tensorfs
