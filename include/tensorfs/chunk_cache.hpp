// Decoded float32 chunks of tensors, kept under a byte budget and evicted least recently used. A chunk that
// several threads want at once is decoded once: the others wait for that decode ("single flight").
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tensorfs/stats.hpp"

namespace tensorfs {

// The values of one chunk (float32, or 16-bit floats for a 16-bit view); immutable once published. Holding a
// reference keeps the memory alive after the cache evicted the chunk (a reply still being sent, for instance).
class Chunk {
public:
    Chunk(float* values, std::size_t bytes, std::function<void(float*, std::size_t)> release)
        : values_(values), bytes_(bytes), release_(std::move(release)) {}
    ~Chunk() { release_(values_, bytes_); }
    Chunk(const Chunk&) = delete;
    Chunk& operator=(const Chunk&) = delete;

    const char* data() const { return reinterpret_cast<const char*>(values_); }
    std::size_t size() const { return bytes_; }

private:
    float* values_;
    std::size_t bytes_;
    std::function<void(float*, std::size_t)> release_;
};

using ChunkRef = std::shared_ptr<const Chunk>;

struct ChunkKey {
    std::uint32_t tensor;
    std::uint64_t index;
    std::uint8_t view = 0;   // which form of the tensor's values the chunk holds (a ValueView)
    bool operator==(const ChunkKey&) const = default;
};

class ChunkCache {
public:
    // Writes the chunk's values (exactly the `bytes` asked for) into the buffer; may throw (nothing is cached then).
    using Fill = std::function<void(float* values)>;

    // `budget`: bytes of decoded values kept (chunks being decoded count too). `buffer_bytes`: the usual size of
    // a chunk, whose buffers are recycled instead of being returned to the system at every eviction.
    ChunkCache(std::uint64_t budget, std::size_t buffer_bytes, Stats& stats);
    ~ChunkCache();
    ChunkCache(const ChunkCache&) = delete;
    ChunkCache& operator=(const ChunkCache&) = delete;

    // The chunk `key` of `bytes` bytes: cached (a hit), decoded by another thread right now (waits for it, a hit
    // too), or decoded here by `fill` (a miss). Rethrows what `fill` threw.
    ChunkRef get(ChunkKey key, std::size_t bytes, const Fill& fill);

    // Decodes the chunk ahead of its readers unless it is cached or being decoded already. Counts neither a hit
    // nor a miss. Returns whether it decoded.
    bool fill_ahead(ChunkKey key, std::size_t bytes, const Fill& fill);

    // Tells that a sequential reader has read the chunk to its end: the kernel's page cache holds those bytes now,
    // so the chunk is worth less than the others and goes to a short queue of consumed chunks, evicted first and
    // held to a few chunks. A stream then recycles a few buffers instead of filling the budget with fresh memory
    // (the first touch of fresh pages costs as much as decoding them). A hit moves it back among the others.
    void consumed(ChunkKey key);

    std::uint64_t budget() const { return budget_; }

private:
    struct KeyHash {
        std::size_t operator()(const ChunkKey& key) const {
            return std::hash<std::uint64_t>()(key.index * 0x9E3779B97F4A7C15ull ^ key.tensor ^
                                              std::uint64_t{key.view} << 56);
        }
    };
    struct Slot {
        ChunkRef chunk;                          // null while being decoded
        std::list<ChunkKey>::iterator recency;   // into recency_ (or consumed_ when consumed), once decoded
        std::size_t bytes = 0;
        bool consumed = false;
    };
    static constexpr std::size_t kKeptConsumed = 8;
    class BufferPool;

    // Decodes into a new slot that the caller has inserted (the lock is released meanwhile) and publishes it.
    ChunkRef decode(std::unique_lock<std::mutex>& lock, ChunkKey key, std::size_t bytes, const Fill& fill);
    // Evicts least recently used chunks until `incoming` more bytes fit in the budget (or nothing is left); moves
    // them to `evicted`, to be released after the lock.
    void make_room(std::size_t incoming, std::vector<ChunkRef>& evicted);
    void evict(ChunkKey victim, std::vector<ChunkRef>& evicted);
    void publish_bytes_in_use();

    const std::uint64_t budget_;
    Stats& stats_;
    std::shared_ptr<BufferPool> pool_;   // shared with the chunks, which may outlive the cache
    std::mutex mutex_;
    std::condition_variable decoded_;
    std::unordered_map<ChunkKey, Slot, KeyHash> slots_;
    std::list<ChunkKey> recency_;    // decoded chunks, most recently used first
    std::list<ChunkKey> consumed_;   // decoded chunks read to their end by a stream, oldest first
    std::uint64_t bytes_in_use_ = 0;
};

}  // namespace tensorfs
