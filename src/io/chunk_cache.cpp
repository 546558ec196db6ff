#include "tensorfs/chunk_cache.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace tensorfs {

// Buffers of the usual chunk size are carved out of 2 MiB slabs backed by transparent huge pages and recycled,
// never returned: first-touch page faults on fresh 4 KiB pages cost ~450 us per MiB on this kind of VM, about
// as much as decoding and sending the chunk, and a huge page costs one fault (~30 us per MiB). The slabs in use
// never exceed what the budget lets the cache hold, plus the decodes in flight. Other sizes (the last chunk of a
// tensor, small tensors) come from malloc.
class ChunkCache::BufferPool {
public:
    explicit BufferPool(std::size_t buffer_bytes) : buffer_bytes_(buffer_bytes) {}
    ~BufferPool() {
        for (void* slab : slabs_) ::munmap(slab, kSlabBytes);
    }

    float* take(std::size_t bytes) {
        if (bytes != buffer_bytes_ || buffer_bytes_ > kSlabBytes) {
            void* memory = std::malloc(bytes == 0 ? 1 : bytes);
            if (memory == nullptr) throw std::bad_alloc();
            return static_cast<float*>(memory);
        }
        const std::lock_guard lock(mutex_);
        if (free_.empty()) add_slab();
        float* buffer = free_.back();
        free_.pop_back();
        return buffer;
    }

    void give_back(float* buffer, std::size_t bytes) {
        if (bytes != buffer_bytes_ || buffer_bytes_ > kSlabBytes) return std::free(buffer);
        const std::lock_guard lock(mutex_);
        free_.push_back(buffer);
    }

private:
    static constexpr std::size_t kSlabBytes = 2 << 20;

    // Maps twice the slab size and keeps the aligned middle, so that the kernel can back it with one huge page.
    void add_slab() {
        void* mapped = ::mmap(nullptr, 2 * kSlabBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mapped == MAP_FAILED) throw std::bad_alloc();
        const auto start = reinterpret_cast<std::uintptr_t>(mapped);
        const std::uintptr_t aligned = (start + kSlabBytes - 1) / kSlabBytes * kSlabBytes;
        if (aligned > start) ::munmap(mapped, aligned - start);
        const std::uintptr_t tail = start + 2 * kSlabBytes - (aligned + kSlabBytes);
        if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + kSlabBytes), tail);
        auto* slab = reinterpret_cast<char*>(aligned);
        ::madvise(slab, kSlabBytes, MADV_HUGEPAGE);  // a hint: without huge pages it still works, more slowly
        slabs_.push_back(slab);
        for (std::size_t at = 0; at + buffer_bytes_ <= kSlabBytes; at += buffer_bytes_) {
            free_.push_back(reinterpret_cast<float*>(slab + at));
        }
    }

    const std::size_t buffer_bytes_;
    std::mutex mutex_;
    std::vector<void*> slabs_;
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
        Slot& slot = found->second;
        recency_.splice(recency_.begin(), slot.consumed ? consumed_ : recency_, slot.recency);
        slot.consumed = false;
        stats_.cache_hits.add(1);
        return slot.chunk;
    }
    stats_.cache_misses.add(1);
    return decode(lock, key, bytes, fill);
}

void ChunkCache::consumed(ChunkKey key) {
    std::vector<ChunkRef> evicted;
    {
        const std::lock_guard lock(mutex_);
        const auto found = slots_.find(key);
        if (found == slots_.end() || !found->second.chunk || found->second.consumed) return;
        consumed_.splice(consumed_.end(), recency_, found->second.recency);
        found->second.consumed = true;
        while (consumed_.size() > kKeptConsumed) evict(consumed_.front(), evicted);
        publish_bytes_in_use();
    }
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
    while (bytes_in_use_ + incoming > budget_ && !(consumed_.empty() && recency_.empty())) {
        evict(consumed_.empty() ? recency_.back() : consumed_.front(), evicted);
    }
}

void ChunkCache::evict(ChunkKey victim, std::vector<ChunkRef>& evicted) {
    const auto found = slots_.find(victim);
    Slot& slot = found->second;
    (slot.consumed ? consumed_ : recency_).erase(slot.recency);
    bytes_in_use_ -= slot.bytes;
    evicted.push_back(std::move(slot.chunk));
    slots_.erase(found);
    stats_.cache_evictions.add(1);
}

void ChunkCache::publish_bytes_in_use() { stats_.cache_bytes_in_use.store(bytes_in_use_, std::memory_order_relaxed); }

}  // namespace tensorfs
