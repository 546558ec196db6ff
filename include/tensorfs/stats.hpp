// Live counters of a mount, shown in .tensorfs/stats.json and by `tensorfs stats`.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

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

// What the remote layer (HTTP, the Hub, S3) did for this mount or command; zero for local sources. Shared by Stats
// and the remote layer (through SourceOptions), whose read-ahead may still finish a fetch after the mount ended.
struct RemoteCounters {
    Counter requests;           // HTTP requests sent (each retry and redirect hop counts)
    Counter bytes_fetched;      // body bytes received for ranges asked for
    Counter retries;            // requests repeated after a connection error, 5xx or 429
    Counter disk_cache_hits;    // blocks read from the disk cache
    Counter disk_cache_misses;  // blocks that had to be fetched
    Counter objects_changed;    // objects found changed (ETag or size) since the mount: their reads fail

    // The counters as a JSON object (the "remote" group of stats.json).
    nlohmann::ordered_json to_json() const;
};

struct Stats {
    FileKindCounters raw, dequant_f32, dequant_npy, dequant_bf16, dequant_f16, model_safetensors, json;
    // A wait is a read that found its chunk being decoded by another thread and took that decode (also a hit).
    Counter cache_hits, cache_misses, cache_waits, cache_evictions, cache_decoded_ahead;
    Counter bytes_decoded, decode_nanoseconds;   // bytes of float32 decoded (also for the 16-bit views)
    Counter read_errors;     // reads answered with an error
    Counter reply_errors;    // replies the kernel did not take (reader gone, or a source page it could not copy)
    std::atomic<std::uint64_t> cache_bytes_in_use{0};
    std::uint64_t cache_budget = 0;
    std::uint64_t cache_chunk_bytes = 0;   // the usual size of a decoded chunk
    std::shared_ptr<RemoteCounters> remote = std::make_shared<RemoteCounters>();

    // The counters as JSON, padded with spaces to a fixed size so that stat() of stats.json is exact.
    std::string render_json() const;
};

// The size stats.json always has.
inline constexpr std::size_t kStatsJsonSize = 4096;

}  // namespace tensorfs
