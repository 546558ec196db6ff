// What every file of the tree holds: sizes and byte ranges, without any FUSE. Used by the FUSE adapter and
// by `tensorfs cat` and `tensorfs convert`, and driven directly by the unit tests.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/dequant_reader.hpp"
#include "tensorfs/model_export.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/stats.hpp"
#include "tensorfs/tree.hpp"
#include "tensorfs/value_view.hpp"

namespace tensorfs {

// The bytes of one read as pieces of memory, for a vectored reply without an extra copy. The memory stays valid
// while this object lives: it holds the decoded chunks, the rendered text and the source bytes it points into.
// Made `with_file_spans`, a piece may also be a span of an open file (a remote file's block in its disk cache),
// for a reply that splices it.
class ReadPieces {
public:
    explicit ReadPieces(bool with_file_spans = false) : with_file_spans_(with_file_spans) {}
    // Pinned: the pieces may point into text_, which a move could relocate.
    ReadPieces(const ReadPieces&) = delete;
    ReadPieces& operator=(const ReadPieces&) = delete;

    // The pieces in order; one whose iov_base is nullptr is the next of file_spans().
    const std::vector<iovec>& iov() const { return iov_; }
    const std::vector<SourceObject::FileSpan>& file_spans() const { return file_spans_; }
    std::size_t size() const { return size_; }
    // Copies all pieces, in order, to `dst` (which has room for size() bytes). Only without file spans.
    void copy_to(char* dst) const;

private:
    friend class Content;
    // Pieces shorter than this are copied, next to the copied piece before them when there is one, so that a reply
    // has a few hundred pieces at most however many small tensors it covers (writev takes at most 1024).
    static constexpr std::size_t kCopiedBelow = 4096;

    // Sets the most bytes this read will hold (its length, clipped to the file).
    void expect(std::size_t length) { copies_capacity_ = length; }
    void add(const void* data, std::size_t length);
    // Room for `length` more bytes held here, added as the next piece; the caller fills it.
    char* add_room(std::size_t length);
    void add_file_span(SourceObject::FileSpan span);

    const bool with_file_spans_;
    std::vector<iovec> iov_;
    std::vector<SourceObject::FileSpan> file_spans_;
    std::size_t size_ = 0;
    std::vector<DequantReader::Piece> chunks_;
    std::string text_;
    std::unique_ptr<char[]> copies_;   // allocated at the first copy, with room for the whole read
    std::size_t copies_capacity_ = 0;
    std::size_t copies_used_ = 0;
};

class Content {
public:
    // `cache_budget`: bytes of decoded chunks kept for the value views. `model_export`: what model.safetensors
    // holds, when the tree has it (it must outlive this object).
    Content(const Catalog& catalog, const Tree& tree, const SourceFiles& files, Stats& stats,
            std::uint64_t cache_budget = kDefaultCacheBudget, const ModelExport* model_export = nullptr);

    std::uint64_t size(Node node) const;

    // Reads at most `length` bytes at `offset` (clipped to the file's size) into `dst`; returns the count.
    // Throws IoError when the source cannot be read.
    std::size_t read(Node node, std::uint64_t offset, std::size_t length, char* dst);

    // The same bytes as pieces of memory, for a reply (see source_slice for a cheaper road). Throws IoError.
    void read_pieces(Node node, std::uint64_t offset, std::size_t length, ReadPieces& pieces);

    // Where the bytes of a file that is a slice of a source file lie, for replies straight from that file: `raw`,
    // and a value view in the tensor's own encoding (dequant.bf16 of a BF16 tensor, dequant.f32 of an F32 one),
    // which serves the raw bytes. Counts the read. nullopt for every other file.
    struct FileSlice {
        const Tensor* tensor;  // nullptr for a side file or a file of source/, which is a whole source file
        std::uint32_t file;
        std::uint64_t offset;
        std::size_t length;  // already clipped to the file's size
    };
    std::optional<FileSlice> source_slice(Node node, std::uint64_t offset, std::size_t length) const;
    // The same slice, not counted: for a look at where the bytes are before serving the read.
    std::optional<FileSlice> source_range(Node node, std::uint64_t offset, std::size_t length) const;
    // Counts a read of `node` served from its source_range (source_slice does it itself).
    void count_source_read(Node node, const FileSlice& slice) const;
    // Reads a slice's bytes into `dst` (from the source, never from its mapping). Throws IoError.
    void read_slice(const FileSlice& slice, void* dst) const {
        if (slice.tensor == nullptr) return files_.read_of_file(slice.file, slice.offset, slice.length, dst);
        files_.read_of_tensor(*slice.tensor, slice.offset, slice.length, dst);
    }

    // When a side file or a file of source/ last changed (its source file's mtime); nullopt for every other node.
    std::optional<timespec> modified(Node node) const;

    // Whether the node is a side file or a file of source/ that could not be opened at mount (opening it is EIO).
    bool unopened(Node node) const;

    // The header of dequant.npy (made when asked: a few hundred bytes a tensor, kept for none); "" without dequant.
    std::string npy_header(std::uint32_t tensor) const;
    Stats& stats() { return stats_; }
    std::size_t chunk_bytes() const { return dequant_.chunk_bytes(); }
    // The decoded values of the tensors (as dequant.f32 and the 16-bit views hold them), for readers of their own
    // (diff).
    DequantReader& values() { return dequant_; }

private:
    std::string meta_json(std::uint32_t tensor) const;
    std::uint64_t meta_json_size(std::uint32_t tensor) const;
    // Whether the node's bytes are its tensor's raw bytes (see source_slice).
    bool serves_raw(Node node) const;
    // The index in files_ of a side file or a file of source/; nullopt for other nodes.
    std::optional<std::uint32_t> whole_file_of(Node node) const;
    FileKindCounters* counters_of(NodeKind kind) const;
    // Appends the part of `text` at [offset, offset + length) to `pieces`.
    static void add_text(const std::string& text, std::uint64_t offset, std::size_t length, ReadPieces& pieces);
    void add_source_bytes(const FileSlice& slice, ReadPieces& pieces) const;
    void add_values(std::uint32_t tensor, ValueView view, std::uint64_t offset, std::size_t length,
                    ReadPieces& pieces);
    void add_model_file(std::uint64_t offset, std::size_t length, ReadPieces& pieces);

    const Catalog& catalog_;
    const SourceFiles& files_;
    Stats& stats_;
    const ModelExport* model_export_;
    DequantReader dequant_;
    std::string model_json_;
    std::vector<std::optional<ValueView>> raw_views_;   // per tensor: the view its raw bytes are, if any
    // Per tensor, the size of its meta.json once asked (0 until then: no meta.json is empty). A walk asks for every
    // one, in readdirplus replies; the text itself is made again at each read.
    std::unique_ptr<std::atomic<std::uint32_t>[]> meta_json_sizes_;
};

}  // namespace tensorfs
