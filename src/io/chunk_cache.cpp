#include "tensorfs/chunk_cache.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <vector>

namespace tensorfs {

// Chunk buffers come straight from mmap: their memory goes back to the system when freed, whatever thread
// frees it (malloc would keep it in per-thread arenas and let the daemon's size drift above the budget). A few
// freed buffers of the usual size are kept for the next decode, which then does not fault in fresh pages.
class ChunkCache::BufferPool {
public:
    explicit BufferPool(std::size_t buffer_bytes) : buffer_bytes_(buffer_bytes) {}
    ~BufferPool() {
        for (float* buffer : free_) unmap(buffer, buffer_bytes_);
    }

    float* take(std::size_t bytes) {
        if (bytes == buffer_bytes_) {
            const std::lock_guard lock(mutex_);
            if (!free_.empty()) {
                float* buffer = free_.back();
                free_.pop_back();
                return buffer;
            }
        }
        void* memory = ::mmap(nullptr, mapped_size(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (memory == MAP_FAILED) throw std::bad_alloc();
        return static_cast<float*>(memory);
    }

    void give_back(float* buffer, std::size_t bytes) {
        if (bytes == buffer_bytes_) {
            const std::lock_guard lock(mutex_);
            if (free_.size() < kKept) {
                free_.push_back(buffer);
                return;
            }
        }
        unmap(buffer, bytes);
    }

private:
    static constexpr std::size_t kKept = 4;

    static std::size_t mapped_size(std::size_t bytes) {
        const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        return bytes == 0 ? page : (bytes + page - 1) / page * page;
    }
    static void unmap(float* buffer, std::size_t bytes) { ::munmap(buffer, mapped_size(bytes)); }

    const std::size_t buffer_bytes_;
    std::mutex mutex_;
    std::vector<float*> free_;
};

ChunkCache::ChunkCache(std::uint64_t budget, std::size_t buffer_bytes, Stats& stats)
    : budget_(budget), stats_(stats), pool_(std::make_shared<BufferPool>(buffer_bytes)) {}

ChunkCache::~ChunkCache() = default;

ChunkRef ChunkCache::get(ChunkKey key, std::size_t bytes, const Fill& fill) {
    std::unique_lock lock(mutex_);
    auto found = slots_.find(key);
    if (found != slots_.end() && !found->second.chunk) {
        // Another thread is decoding it. If that decode fails the slot is gone and this thread tries itself.
        stats_.cache_waits.add(1);
        decoded_.wait(lock, [&] {
            const auto now = slots_.find(key);
            return now == slots_.end() || now->second.chunk != nullptr;
        });
        found = slots_.find(key);
    }
    if (found != slots_.end()) {
        recency_.splice(recency_.begin(), recency_, found->second.recency);
        stats_.cache_hits.add(1);
        return found->second.chunk;
    }
    stats_.cache_misses.add(1);
    return decode(lock, key, bytes, fill);
}

bool ChunkCache::fill_ahead(ChunkKey key, std::size_t bytes, const Fill& fill) {
    std::unique_lock lock(mutex_);
    if (slots_.contains(key)) return false;
    decode(lock, key, bytes, fill);
    stats_.cache_decoded_ahead.add(1);
    return true;
}

ChunkRef ChunkCache::decode(std::unique_lock<std::mutex>& lock, ChunkKey key, std::size_t bytes, const Fill& fill) {
    std::vector<ChunkRef> evicted;
    make_room(bytes, evicted);
    slots_.emplace(key, Slot{nullptr, {}, bytes});
    bytes_in_use_ += bytes;
    publish_bytes_in_use();
    lock.unlock();
    evicted.clear();  // frees their memory (unless a reader still holds one) outside the lock

    ChunkRef chunk;
    try {
        float* values = pool_->take(bytes);
        std::shared_ptr<BufferPool> pool = pool_;
        chunk = std::make_shared<const Chunk>(values, bytes, [pool](float* buffer, std::size_t size) {
            pool->give_back(buffer, size);
        });
        fill(values);
    } catch (...) {
        lock.lock();
        slots_.erase(key);
        bytes_in_use_ -= bytes;
        publish_bytes_in_use();
        decoded_.notify_all();
        throw;
    }

    lock.lock();
    Slot& slot = slots_.at(key);
    slot.chunk = chunk;
    recency_.push_front(key);
    slot.recency = recency_.begin();
    decoded_.notify_all();
    return chunk;
}

void ChunkCache::make_room(std::size_t incoming, std::vector<ChunkRef>& evicted) {
    while (!recency_.empty() && bytes_in_use_ + incoming > budget_) {
        const ChunkKey victim = recency_.back();
        recency_.pop_back();
        const auto found = slots_.find(victim);
        bytes_in_use_ -= found->second.bytes;
        evicted.push_back(std::move(found->second.chunk));
        slots_.erase(found);
        stats_.cache_evictions.add(1);
    }
}

void ChunkCache::publish_bytes_in_use() { stats_.cache_bytes_in_use.store(bytes_in_use_, std::memory_order_relaxed); }

}  // namespace tensorfs
