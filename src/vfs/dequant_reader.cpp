#include "tensorfs/dequant_reader.hpp"

#include <sched.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <thread>

#include "tensorfs/quantized_values.hpp"
#include "tensorfs/decode_view.hpp"
#include "stored_blocks.hpp"

namespace tensorfs {
namespace {

constexpr std::size_t kLargestChunk = 1 << 20;
constexpr std::size_t kSmallestChunk = 4 << 10;
constexpr std::uint64_t kChunksPerBudget = 16;
// A chunk of a strided view (a transposed matrix) gathers a few elements from all over the view's bytes, one read
// per place: its chunks are made up to this many times larger (a quarter of the cache at most), so that each read
// takes more of the bytes around it.
constexpr std::size_t kStridedChunkFactor = 16;

// next_chunk_ of a stream that has not been read.
constexpr std::uint64_t kNoReadYet = UINT64_MAX;

// Where a tensor's stream of one view keeps its per-stream state (next_chunk_, offered_until_).
std::size_t stream_of(std::uint32_t tensor, ValueView view) {
    return std::size_t{tensor} * kValueViewCount + static_cast<std::size_t>(view);
}

// The cores this process may run on.
unsigned usable_cores() {
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 0) {
        return static_cast<unsigned>(CPU_COUNT(&cpus));
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

// One decode worker per core, but no more than a quarter of the chunks the budget holds, so that decodes ahead of
// readers never crowd out what they read.
unsigned decode_workers(std::uint64_t budget_chunks) {
    return static_cast<unsigned>(std::clamp<std::uint64_t>(budget_chunks / 4, 1, usable_cores()));
}

// How far ahead of a sequential reader chunks are decoded: two per worker (each worker has its next chunk waiting
// while it decodes one), within a quarter of the budget.
std::uint64_t chunks_ahead(unsigned workers, std::uint64_t budget_chunks) {
    return std::clamp<std::uint64_t>(2 * std::uint64_t{workers}, 1, std::max<std::uint64_t>(1, budget_chunks / 4));
}

}  // namespace

std::size_t chunk_bytes_for_budget(std::uint64_t budget) {
    const std::uint64_t share = std::clamp<std::uint64_t>(budget / kChunksPerBudget, kSmallestChunk, kLargestChunk);
    return std::bit_floor(share);
}

DequantReader::DequantReader(const Catalog& catalog, const SourceFiles& files, Stats& stats,
                             std::uint64_t cache_budget)
    : catalog_(catalog),
      files_(files),
      stats_(stats),
      chunk_bytes_(chunk_bytes_for_budget(cache_budget)),
      strided_chunk_bytes_(
          std::clamp<std::uint64_t>(cache_budget / 4, chunk_bytes_, chunk_bytes_ * kStridedChunkFactor)),
      cache_(cache_budget, chunk_bytes_, stats),
      next_chunk_(std::make_unique<std::atomic<std::uint64_t>[]>(catalog.tensors.size() * kValueViewCount)),
      offered_until_(std::make_unique<std::atomic<std::uint64_t>[]>(catalog.tensors.size() * kValueViewCount)),
      workers_(decode_workers(cache_budget / chunk_bytes_)),
      chunks_ahead_(chunks_ahead(workers_, cache_budget / chunk_bytes_)),
      ahead_(workers_, 4 * chunks_ahead_) {
    stats_.cache_budget = cache_budget;
    stats_.cache_chunk_bytes = chunk_bytes_;
    stats_.decode_workers = workers_;
    stats_.decode_kernels = kernel_path_name(active_kernel_path());
    // No stream has read yet: its first read is never sequential, so a read that only touches a tensor's first bytes
    // (the page of an export that holds the end of the header, a peek at a tensor) decodes nothing ahead.
    for (std::size_t stream = 0; stream < catalog.tensors.size() * kValueViewCount; ++stream) {
        next_chunk_[stream].store(kNoReadYet, std::memory_order_relaxed);
    }
    for (const auto& tensor : catalog.tensors) {
        if (!tensor.has_values()) continue;
        const std::string_view dtype = decoded_dtype(tensor);
        const auto known = std::find_if(decoded_by_dtype_.begin(), decoded_by_dtype_.end(),
                                        [dtype](const auto& entry) { return entry.first == dtype; });
        if (known == decoded_by_dtype_.end()) {
            decoded_by_dtype_.emplace_back(dtype, &stats_.bytes_decoded_by_dtype.of(dtype));
        }
    }
}

std::string_view DequantReader::decoded_dtype(const Tensor& tensor) {
    return tensor.quantization ? quantized_dtype(*tensor.quantization) : tensor.type->name;
}

Counter& DequantReader::decoded_bytes_of(const Tensor& tensor) {
    // A model has a handful of dtypes: a scan is quicker than a map.
    const std::string_view dtype = decoded_dtype(tensor);
    for (const auto& [known, counter] : decoded_by_dtype_) {
        if (known == dtype) return *counter;
    }
    return stats_.bytes_decoded;  // unreachable: every dtype with values was registered at construction
}

std::uint64_t DequantReader::chunk_elements(const Tensor& tensor, ValueView view) const {
    // A quantized weight decodes whole rows; one stored transposed gathers them from across its parts' bytes.
    const std::uint64_t block = tensor.quantization ? row_elements(tensor) : tensor.type->block_elements;
    const bool gathered = tensor.strided() || (tensor.quantization && stored_transposed(*tensor.quantization));
    const std::uint64_t bytes = gathered ? strided_chunk_bytes_ : chunk_bytes_;
    return std::max<std::uint64_t>(1, bytes / bytes_per_value(view) / block) * block;
}

std::uint64_t DequantReader::chunk_count(const Tensor& tensor, ValueView view) const {
    const std::uint64_t per_chunk = chunk_elements(tensor, view);
    return (tensor.elements + per_chunk - 1) / per_chunk;
}

std::size_t DequantReader::chunk_size(const Tensor& tensor, ValueView view, std::uint64_t index) const {
    const std::uint64_t per_chunk = chunk_elements(tensor, view);
    const std::uint64_t first = index * per_chunk;
    return static_cast<std::size_t>(std::min(per_chunk, tensor.elements - first) * bytes_per_value(view));
}

void DequantReader::decode(std::uint32_t index, ValueView view, std::uint64_t chunk, float* values) {
    const Tensor& tensor = catalog_.tensors[index];
    if (tensor.quantization) return decode_quantized(tensor, view, chunk, values);
    const TypeTraits& type = *tensor.type;
    const std::uint64_t first_block = chunk * (chunk_elements(tensor, view) / type.block_elements);
    const std::uint64_t blocks = chunk_size(tensor, view, chunk) / bytes_per_value(view) / type.block_elements;

    thread_local std::vector<std::uint8_t> stored;
    stored.resize(blocks * type.block_bytes);
    read_stored_blocks(files_, tensor, first_block, blocks, stored.data());

    const auto started = std::chrono::steady_clock::now();
    decode_blocks(type, stored.data(), blocks, view, values);
    const auto elapsed = std::chrono::steady_clock::now() - started;
    stats_.decode_nanoseconds.add(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
    stats_.bytes_decoded.add(blocks * type.block_elements * 4);
    decoded_bytes_of(tensor).add(blocks * type.block_elements * 4);
}

void DequantReader::decode_quantized(const Tensor& tensor, ValueView view, std::uint64_t chunk, void* values) {
    const std::uint64_t row = row_elements(tensor);
    const std::uint64_t rows = chunk_size(tensor, view, chunk) / bytes_per_value(view) / row;
    const auto started = std::chrono::steady_clock::now();
    write_quantized_rows(files_, tensor, chunk * (chunk_elements(tensor, view) / row), rows, view, values);
    const auto elapsed = std::chrono::steady_clock::now() - started;
    stats_.decode_nanoseconds.add(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
    stats_.bytes_decoded.add(rows * row * 4);
    decoded_bytes_of(tensor).add(rows * row * 4);
}

ChunkCache::Fill DequantReader::decoder(std::uint32_t tensor, ValueView view, std::uint64_t chunk) {
    return [this, tensor, view, chunk](float* values) { decode(tensor, view, chunk, values); };
}

void DequantReader::read_pieces(std::uint32_t index, std::uint64_t offset, std::size_t length,
                                std::vector<Piece>& pieces, ValueView view) {
    if (length == 0) return;
    const Tensor& tensor = catalog_.tensors[index];
    const std::uint64_t chunk_stride = chunk_elements(tensor, view) * bytes_per_value(view);
    const std::uint64_t first = offset / chunk_stride;
    const std::uint64_t last = (offset + length - 1) / chunk_stride;
    const auto key = [&](std::uint64_t chunk) { return ChunkKey{index, chunk, static_cast<std::uint8_t>(view)}; };

    const std::uint64_t expected = next_chunk_[stream_of(index, view)].exchange(last + 1, std::memory_order_relaxed);
    const bool sequential = first == expected || first + 1 == expected;
    if (sequential) {
        decode_ahead_of(index, view, last);
    } else {
        offered_until_[stream_of(index, view)].store(last, std::memory_order_relaxed);  // a stream may start here
    }

    for (std::uint64_t chunk = first; chunk <= last; ++chunk) {
        const std::uint64_t chunk_start = chunk * chunk_stride;
        const std::size_t size = chunk_size(tensor, view, chunk);
        const std::uint64_t from = std::max(offset, chunk_start);
        const std::uint64_t to = std::min<std::uint64_t>(offset + length, chunk_start + size);
        ChunkRef values = cache_.get(key(chunk), size, decoder(index, view, chunk));
        pieces.push_back(Piece{std::move(values), static_cast<std::size_t>(from - chunk_start),
                               static_cast<std::size_t>(to - from)});
        if (sequential && to == chunk_start + size) cache_.consumed(key(chunk));
    }
}

void DequantReader::decode_ahead_of(std::uint32_t index, ValueView view, std::uint64_t last) {
    const Tensor& tensor = catalog_.tensors[index];
    const std::uint64_t count = chunk_count(tensor, view);
    if (last + 1 >= count) return;
    const std::uint64_t horizon = std::min(last + chunks_ahead_, count - 1);
    // Chunks up to the mark were offered by an earlier read of this stream; a mark outside (last, horizon] is left
    // by a stream elsewhere in the tensor.
    std::atomic<std::uint64_t>& offered = offered_until_[stream_of(index, view)];
    const std::uint64_t mark = offered.load(std::memory_order_relaxed);
    for (std::uint64_t chunk = mark > last && mark <= horizon ? mark + 1 : last + 1; chunk <= horizon; ++chunk) {
        const std::size_t bytes = chunk_size(tensor, view, chunk);
        const bool queued = ahead_.offer([this, index, view, chunk, bytes] {
            try {
                cache_.fill_ahead(ChunkKey{index, chunk, static_cast<std::uint8_t>(view)}, bytes,
                                  decoder(index, view, chunk));
            } catch (...) {
                // The reader that wants this chunk decodes it again and gets the error itself.
            }
        });
        if (!queued) return;  // the queue is full: the reader decodes the rest itself, or a later read offers it
        offered.store(chunk, std::memory_order_relaxed);
    }
}

}  // namespace tensorfs
