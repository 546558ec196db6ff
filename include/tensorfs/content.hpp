// What every file of the tree holds: sizes and byte ranges, without any FUSE. Used by the FUSE adapter and
// by `tensorfs cat`, and driven directly by the unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tensorfs/catalog.hpp"
#include "tensorfs/dequant_reader.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/stats.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs {

class Content {
public:
    Content(const Catalog& catalog, const Tree& tree, const SourceFiles& files, Stats& stats);

    std::uint64_t size(Node node) const;

    // Reads at most `length` bytes at `offset` (clipped to the file's size) into `dst`; returns the count.
    // Throws IoError when the source cannot be read.
    std::size_t read(Node node, std::uint64_t offset, std::size_t length, char* dst);

    // Where the bytes of a `raw` range lie in the source, for replies straight from the file descriptor.
    struct FileSlice {
        int fd;
        std::uint64_t offset;
        std::size_t length;  // already clipped to the tensor's size
    };
    FileSlice raw_slice(std::uint32_t tensor, std::uint64_t offset, std::size_t length) const;

    const std::string& npy_header(std::uint32_t tensor) const;
    Stats& stats() { return stats_; }

private:
    std::string meta_json(std::uint32_t tensor) const;

    const Catalog& catalog_;
    const SourceFiles& files_;
    Stats& stats_;
    DequantReader dequant_;
    std::string model_json_;
    std::vector<std::string> npy_headers_;  // per tensor; empty for tensors without dequant
};

}  // namespace tensorfs
