// Live counters of a mount, shown in .tensorfs/stats.json and by `tensorfs stats`. They live in the base layer
// (src/base), below io and vfs, because every layer counts: the chunk cache (src/io) as well as the tree's files
// (src/vfs) and the FUSE adapter. This header and src/base depend on nothing of tensorfs.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace tensorfs {

struct Counter {
    std::atomic<std::uint64_t> value{0};
    void add(std::uint64_t n) { value.fetch_add(n, std::memory_order_relaxed); }
    std::uint64_t get() const { return value.load(std::memory_order_relaxed); }
};

struct FileKindCounters {
    Counter reads;
    Counter bytes;
};

struct Stats {
    FileKindCounters raw, dequant_f32, dequant_npy, json;
    // A wait is a read that found its chunk being decoded by another thread and took that decode (also a hit).
    Counter cache_hits, cache_misses, cache_waits, cache_evictions, cache_decoded_ahead;
    Counter bytes_decoded, decode_nanoseconds;
    Counter read_errors;     // reads answered with an error
    Counter reply_errors;    // replies the kernel did not take (reader gone, or a source page it could not copy)
    std::atomic<std::uint64_t> cache_bytes_in_use{0};
    std::uint64_t cache_budget = 0;
    std::uint64_t cache_chunk_bytes = 0;   // the usual size of a decoded chunk

    // The counters as JSON, padded with spaces to a fixed size so that stat() of stats.json is exact.
    std::string render_json() const;
};

// The size stats.json always has.
inline constexpr std::size_t kStatsJsonSize = 4096;

}  // namespace tensorfs
