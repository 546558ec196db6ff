// Live counters of a mount, shown in .tensorfs/stats.json and by `tensorfs stats`.
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
    Counter cache_hits, cache_misses, cache_evictions;
    Counter bytes_decoded, decode_nanoseconds;
    Counter read_errors;
    std::atomic<std::uint64_t> cache_bytes_in_use{0};
    std::uint64_t cache_budget = 0;

    // The counters as JSON, padded with spaces to a fixed size so that stat() of stats.json is exact.
    std::string render_json() const;
};

// The size stats.json always has.
inline constexpr std::size_t kStatsJsonSize = 4096;

}  // namespace tensorfs
