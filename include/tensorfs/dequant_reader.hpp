// Serves byte ranges of tensors' values (float32, or rounded to 16 bits: see value_view.hpp) from decoded chunks:
// runs of whole blocks (about 1 MiB of values each), decoded only when a read touches them, kept in a ChunkCache,
// and decoded ahead of sequential readers by a pool of workers (one per core, within the cache budget) so that
// decoding overlaps the transfer of earlier chunks and uses every core.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "tensorfs/background_queue.hpp"
#include "tensorfs/catalog.hpp"
#include "tensorfs/chunk_cache.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/stats.hpp"
#include "tensorfs/value_view.hpp"

namespace tensorfs {

// Bytes of decoded chunks kept by default (`--cache-size`).
inline constexpr std::uint64_t kDefaultCacheBudget = 256ull << 20;

// The usual size of a chunk for a cache budget: 1 MiB, or less for budgets under 16 MiB so that a small cache
// still holds 16 chunks (never less than 4 KiB; a chunk is always at least one block).
std::size_t chunk_bytes_for_budget(std::uint64_t budget);

class DequantReader {
public:
    DequantReader(const Catalog& catalog, const SourceFiles& files, Stats& stats, std::uint64_t cache_budget);

    // The part of one decoded chunk that a read covers.
    struct Piece {
        ChunkRef chunk;
        std::size_t offset;
        std::size_t length;
    };

    // Appends to `pieces` the chunk parts holding bytes [offset, offset + length) of the tensor's little-endian
    // values in `view`, in order. The range must lie inside the view's size (elements x bytes_per_value). Throws
    // IoError when the source cannot be read.
    void read_pieces(std::uint32_t tensor, std::uint64_t offset, std::size_t length, std::vector<Piece>& pieces,
                     ValueView view = ValueView::F32);

    std::size_t chunk_bytes() const { return chunk_bytes_; }

private:
    // Chunks of a 16-bit view hold twice the elements of a float32 chunk: every chunk takes about chunk_bytes_.
    std::uint64_t chunk_elements(const Tensor& tensor, ValueView view) const;
    std::uint64_t chunk_count(const Tensor& tensor, ValueView view) const;
    // Bytes of values in chunk `index` of `tensor`.
    std::size_t chunk_size(const Tensor& tensor, ValueView view, std::uint64_t index) const;
    ChunkCache::Fill decoder(std::uint32_t tensor, ValueView view, std::uint64_t index);
    void decode(std::uint32_t tensor, ValueView view, std::uint64_t index, float* values);
    void decode_quantized(const Tensor& tensor, ValueView view, std::uint64_t index, void* values);
    void decode_ahead_of(std::uint32_t tensor, ValueView view, std::uint64_t last);
    // The dtype a tensor's decoded bytes are counted under: its stored one, or its quantized scheme's.
    static std::string_view decoded_dtype(const Tensor& tensor);
    Counter& decoded_bytes_of(const Tensor& tensor);

    const Catalog& catalog_;
    const SourceFiles& files_;
    Stats& stats_;
    std::vector<std::pair<std::string_view, Counter*>> decoded_by_dtype_;
    const std::size_t chunk_bytes_;
    const std::size_t strided_chunk_bytes_;  // for the chunks of strided views
    ChunkCache cache_;
    // Per tensor and view, the chunk after the last one read: a read that starts there (or one before) is
    // sequential. The first read of a stream is not.
    std::unique_ptr<std::atomic<std::uint64_t>[]> next_chunk_;
    // Per tensor and view, the last chunk offered to the workers, so that each read offers only chunks not offered
    // yet.
    std::unique_ptr<std::atomic<std::uint64_t>[]> offered_until_;
    const unsigned workers_;
    const std::uint64_t chunks_ahead_;   // how many chunks past a sequential read are decoded ahead
    BackgroundQueue ahead_;   // last: its threads stop before the members they use go away
};

}  // namespace tensorfs
