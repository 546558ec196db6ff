// Buffers for fetched blocks, mapped from the system and given back to it, with a few kept for reuse.
//
// Why not new[]: glibc serves 1 MiB requests from per-thread arenas once its mmap threshold has risen, and a
// buffer filled by one fetch thread and freed by the reader or the disk writer goes back to that thread's arena.
// Each arena then keeps its own high-water mark of freed buffers: during a cold 1 GiB load the daemon held
// 260-380 MiB with 128 MiB of blocks accounted, against 200-250 MiB with every buffer mapped. The buffers kept
// for reuse spare the page faults of mapping a fresh one: on a virtual machine that hands freed memory back to its
// host, the first touch of a page costs about ten times a reused one (docs/benchmarks.md, row L1n).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace tensorfs::remote {

class BlockBuffers : public std::enable_shared_from_this<BlockBuffers> {
public:
    // Keeps up to `kept_bytes` of freed buffers of `buffer_bytes` for reuse.
    BlockBuffers(std::size_t buffer_bytes, std::size_t kept_bytes);
    ~BlockBuffers();
    BlockBuffers(const BlockBuffers&) = delete;
    BlockBuffers& operator=(const BlockBuffers&) = delete;

    // A buffer of `length` bytes (contents undefined), given back when the last owner lets go; the pool lives as
    // long as any of its buffers. Throws std::bad_alloc when the system has no memory.
    std::shared_ptr<char[]> take(std::size_t length);

private:
    void give_back(char* buffer, std::size_t length);

    const std::size_t buffer_bytes_;
    const std::size_t most_kept_;
    std::mutex mutex_;
    std::vector<char*> kept_;
};

}  // namespace tensorfs::remote
