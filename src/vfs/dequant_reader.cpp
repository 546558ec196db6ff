#include "tensorfs/dequant_reader.hpp"

#include <sched.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <thread>

namespace tensorfs {
namespace {

constexpr std::size_t kLargestChunk = 1 << 20;
constexpr std::size_t kSmallestChunk = 4 << 10;
constexpr std::uint64_t kChunksPerBudget = 16;

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
      cache_(cache_budget, chunk_bytes_, stats),
      next_chunk_(std::make_unique<std::atomic<std::uint64_t>[]>(catalog.tensors.size())),
      offered_until_(std::make_unique<std::atomic<std::uint64_t>[]>(catalog.tensors.size())),
      workers_(decode_workers(cache_budget / chunk_bytes_)),
      chunks_ahead_(chunks_ahead(workers_, cache_budget / chunk_bytes_)),
      ahead_(workers_, 4 * chunks_ahead_) {
    stats_.cache_budget = cache_budget;
    stats_.cache_chunk_bytes = chunk_bytes_;
    stats_.decode_workers = workers_;
}

std::uint64_t DequantReader::chunk_elements(const Tensor& tensor) const {
    const std::uint64_t block = tensor.type->block_elements;
    return std::max<std::uint64_t>(1, chunk_bytes_ / 4 / block) * block;
}

std::uint64_t DequantReader::chunk_count(const Tensor& tensor) const {
    const std::uint64_t per_chunk = chunk_elements(tensor);
    return (tensor.elements + per_chunk - 1) / per_chunk;
}

std::size_t DequantReader::chunk_size(const Tensor& tensor, std::uint64_t index) const {
    const std::uint64_t per_chunk = chunk_elements(tensor);
    const std::uint64_t first = index * per_chunk;
    return static_cast<std::size_t>(std::min(per_chunk, tensor.elements - first) * 4);
}

void DequantReader::decode(std::uint32_t index, std::uint64_t chunk, float* values) {
    const Tensor& tensor = catalog_.tensors[index];
    const TypeTraits& type = *tensor.type;
    const std::uint64_t first_block = chunk * (chunk_elements(tensor) / type.block_elements);
    const std::uint64_t blocks = chunk_size(tensor, chunk) / 4 / type.block_elements;

    thread_local std::vector<std::uint8_t> stored;
    stored.resize(blocks * type.block_bytes);
    files_.read_of_tensor(tensor, tensor.offset + first_block * type.block_bytes, stored.size(), stored.data());

    const auto started = std::chrono::steady_clock::now();
    active_kernel(type)(stored.data(), blocks, values);
    const auto elapsed = std::chrono::steady_clock::now() - started;
    stats_.decode_nanoseconds.add(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
    stats_.bytes_decoded.add(blocks * type.block_elements * 4);
}

ChunkCache::Fill DequantReader::decoder(std::uint32_t tensor, std::uint64_t chunk) {
    return [this, tensor, chunk](float* values) { decode(tensor, chunk, values); };
}

void DequantReader::read_pieces(std::uint32_t index, std::uint64_t offset, std::size_t length,
                                std::vector<Piece>& pieces) {
    if (length == 0) return;
    const Tensor& tensor = catalog_.tensors[index];
    const std::uint64_t chunk_stride = chunk_elements(tensor) * 4;
    const std::uint64_t first = offset / chunk_stride;
    const std::uint64_t last = (offset + length - 1) / chunk_stride;

    const std::uint64_t expected = next_chunk_[index].exchange(last + 1, std::memory_order_relaxed);
    const bool sequential = first == expected || first + 1 == expected;
    if (sequential) {
        decode_ahead_of(index, last);
    } else {
        offered_until_[index].store(last, std::memory_order_relaxed);  // a stream may start here: nothing offered yet
    }

    for (std::uint64_t chunk = first; chunk <= last; ++chunk) {
        const std::uint64_t chunk_start = chunk * chunk_stride;
        const std::size_t size = chunk_size(tensor, chunk);
        const std::uint64_t from = std::max(offset, chunk_start);
        const std::uint64_t to = std::min<std::uint64_t>(offset + length, chunk_start + size);
        ChunkRef values = cache_.get(ChunkKey{index, chunk}, size, decoder(index, chunk));
        pieces.push_back(Piece{std::move(values), static_cast<std::size_t>(from - chunk_start),
                               static_cast<std::size_t>(to - from)});
        if (sequential && to == chunk_start + size) cache_.consumed(ChunkKey{index, chunk});
    }
}

void DequantReader::decode_ahead_of(std::uint32_t index, std::uint64_t last) {
    const Tensor& tensor = catalog_.tensors[index];
    const std::uint64_t count = chunk_count(tensor);
    if (last + 1 >= count) return;
    const std::uint64_t horizon = std::min(last + chunks_ahead_, count - 1);
    // Chunks up to the mark were offered by an earlier read of this stream; a mark outside (last, horizon] is left
    // by a stream elsewhere in the tensor.
    const std::uint64_t mark = offered_until_[index].load(std::memory_order_relaxed);
    for (std::uint64_t chunk = mark > last && mark <= horizon ? mark + 1 : last + 1; chunk <= horizon; ++chunk) {
        const std::size_t bytes = chunk_size(tensor, chunk);
        const bool queued = ahead_.offer([this, index, chunk, bytes] {
            try {
                cache_.fill_ahead(ChunkKey{index, chunk}, bytes, decoder(index, chunk));
            } catch (...) {
                // The reader that wants this chunk decodes it again and gets the error itself.
            }
        });
        if (!queued) return;  // the queue is full: the reader decodes the rest itself, or a later read offers it
        offered_until_[index].store(chunk, std::memory_order_relaxed);
    }
}

}  // namespace tensorfs
