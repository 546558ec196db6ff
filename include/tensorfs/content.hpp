// What every file of the tree holds: sizes and byte ranges, without any FUSE. Used by the FUSE adapter and
// by `tensorfs cat`, and driven directly by the unit tests.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/dequant_reader.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/stats.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs {

// The bytes of one read as pieces of memory, for a vectored reply without an extra copy. The memory stays valid
// while this object lives: it holds the decoded chunks and the rendered text it points into.
class ReadPieces {
public:
    ReadPieces() = default;
    // Pinned: the pieces may point into text_, which a move could relocate.
    ReadPieces(const ReadPieces&) = delete;
    ReadPieces& operator=(const ReadPieces&) = delete;

    const std::vector<iovec>& iov() const { return iov_; }
    std::size_t size() const { return size_; }
    // Copies all pieces, in order, to `dst` (which has room for size() bytes).
    void copy_to(char* dst) const;

private:
    friend class Content;
    void add(const void* data, std::size_t length);

    std::vector<iovec> iov_;
    std::size_t size_ = 0;
    std::vector<DequantReader::Piece> chunks_;
    std::string text_;
};

class Content {
public:
    // `cache_budget`: bytes of decoded chunks kept for dequant.f32 / dequant.npy.
    Content(const Catalog& catalog, const Tree& tree, const SourceFiles& files, Stats& stats,
            std::uint64_t cache_budget = kDefaultCacheBudget);

    std::uint64_t size(Node node) const;

    // Reads at most `length` bytes at `offset` (clipped to the file's size) into `dst`; returns the count.
    // Throws IoError when the source cannot be read.
    std::size_t read(Node node, std::uint64_t offset, std::size_t length, char* dst);

    // The same bytes as pieces of memory, for every kind of file but `raw` (see raw_slice). Throws IoError.
    void read_pieces(Node node, std::uint64_t offset, std::size_t length, ReadPieces& pieces);

    // Where the bytes of a `raw` range lie in the source, for replies straight from the file.
    struct FileSlice {
        const Tensor* tensor;
        std::uint32_t file;
        std::uint64_t offset;
        std::size_t length;  // already clipped to the tensor's size
    };
    // Reads a slice's bytes into `dst` (from the source, never from its mapping). Throws IoError.
    void read_slice(const FileSlice& slice, void* dst) const {
        files_.read_of_tensor(*slice.tensor, slice.offset, slice.length, dst);
    }
    // The slice a read of `raw` is served from, counted as a read.
    FileSlice raw_slice(std::uint32_t tensor, std::uint64_t offset, std::size_t length) const;
    // The same slice, not counted: for a look at where the bytes are before serving the read.
    FileSlice raw_range(std::uint32_t tensor, std::uint64_t offset, std::size_t length) const;

    // The header of dequant.npy (made when asked: a few hundred bytes a tensor, kept for none); "" without dequant.
    std::string npy_header(std::uint32_t tensor) const;
    Stats& stats() { return stats_; }
    std::size_t chunk_bytes() const { return dequant_.chunk_bytes(); }

private:
    std::string meta_json(std::uint32_t tensor) const;
    std::uint64_t meta_json_size(std::uint32_t tensor) const;
    // Appends the part of `text` at [offset, offset + length) to `pieces`.
    static void add_text(const std::string& text, std::uint64_t offset, std::size_t length, ReadPieces& pieces);
    // add_text for the text files (JSON, and the metrics), counted as `json` reads.
    void read_text(const std::string& text, std::uint64_t offset, std::size_t length, ReadPieces& pieces);

    const Catalog& catalog_;
    const SourceFiles& files_;
    Stats& stats_;
    DequantReader dequant_;
    std::string model_json_;
    // Per tensor, the size of its meta.json once asked (0 until then: no meta.json is empty). A walk asks for every
    // one, in readdirplus replies; the text itself is made again at each read.
    std::unique_ptr<std::atomic<std::uint32_t>[]> meta_json_sizes_;
};

}  // namespace tensorfs
