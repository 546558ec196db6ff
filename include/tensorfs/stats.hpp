// Live counters of a mount, shown in .tensorfs/stats.json, .tensorfs/metrics and by `tensorfs stats`. They live in
// the base layer (src/base), below io and vfs, because every layer counts: the chunk cache (src/io) as well as
// the tree's files (src/vfs) and the FUSE adapter. This header and src/base depend on nothing of tensorfs.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tensorfs {

struct Counter {
    std::atomic<std::uint64_t> value{0};
    void add(std::uint64_t n) { value.fetch_add(n, std::memory_order_relaxed); }
    std::uint64_t get() const { return value.load(std::memory_order_relaxed); }
};

// A value that goes up and down (a gauge): set, or moved by signed amounts.
struct Gauge {
    std::atomic<std::int64_t> value{0};
    void set(std::int64_t n) { value.store(n, std::memory_order_relaxed); }
    void add(std::int64_t n) { value.fetch_add(n, std::memory_order_relaxed); }
    std::int64_t get() const { return value.load(std::memory_order_relaxed); }
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
    Counter unanswered;         // requests that got no answer by their deadline: each makes the server silent
    Counter disk_cache_hits;    // blocks read from the disk cache
    Counter disk_cache_misses;  // blocks that had to be fetched
    Counter objects_changed;    // objects found changed (ETag or size) since the mount: their reads fail

    // The state of the read-ahead and of the memory it uses, as it is now (gauges, not counters).
    Gauge window_bytes;         // how far ahead of the last sequential reader blocks are fetched
    Gauge connections_in_use;   // range requests in flight
    Gauge bytes_in_flight;      // bytes of those requests (allocated, being filled)
    Gauge bytes_in_memory;      // fetched blocks kept in memory for readers (the recent ones)
    Gauge bytes_queued_for_disk;  // fetched blocks waiting for the disk cache's writer, not also kept for readers
    Gauge memory_budget;        // what in flight, in memory and queued may hold together
    Gauge max_connections;      // the mount option max_connections=
    Gauge readahead_limit;      // the mount option readahead=
    Gauge timeout_ms;           // the mount option timeout=, in milliseconds
    Gauge first_byte_us;        // a range answer's time to its first byte (the round trip), recent average
    Gauge round_trip_us;        // a range answer's time to its last byte, recent average
    Gauge connection_rate;      // bytes per second of one connection while a range arrives, recent average
    Gauge link_rate;            // bytes per second of all fetches together while any is in flight, recent average

    // The three memory gauges above, set and read as one: a reader never adds a figure from before a change to
    // one from after it (a block moving from in flight to in memory would count twice). Set under the remote
    // layer's lock, one writer at a time.
    struct Memory {
        std::int64_t in_flight = 0;
        std::int64_t in_memory = 0;
        std::int64_t queued_for_disk = 0;
    };
    void set_memory(const Memory& memory);
    Memory memory() const;

    // The counters as a JSON object (the "remote" group of stats.json).
    nlohmann::ordered_json to_json() const;

private:
    std::atomic<std::uint64_t> memory_version_{0};  // odd while set_memory() writes
};

// How long reads took, counted in fixed buckets: lock-free, so every read may be counted.
class LatencyHistogram {
public:
    // Upper bounds of the buckets in nanoseconds, and the same as Prometheus' `le` label writes them (seconds).
    // A last bucket, past the table, takes everything slower.
    static constexpr std::array<std::uint64_t, 16> kBoundNanoseconds{
        25'000,     50'000,      100'000,     250'000,     500'000,       1'000'000,     2'500'000,     5'000'000,
        10'000'000, 25'000'000,  50'000'000,  100'000'000, 250'000'000,   500'000'000,   1'000'000'000, 5'000'000'000};
    static constexpr std::array<std::string_view, 16> kBoundSeconds{
        "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
        "0.01",    "0.025", "0.05",   "0.1",     "0.25",   "0.5",   "1",      "5"};
    static constexpr std::size_t kBuckets = kBoundNanoseconds.size() + 1;

    void observe(std::uint64_t nanoseconds);
    // Observations in bucket `index` alone (not cumulative); index kBuckets - 1 is the slowest.
    std::uint64_t in_bucket(std::size_t index) const { return buckets_[index].get(); }
    std::uint64_t nanoseconds() const { return nanoseconds_.get(); }

private:
    std::array<Counter, kBuckets> buckets_;
    Counter nanoseconds_;
};

// The requests the kernel sends to the daemon, by kind: what a walk or a read costs in round trips.
enum class FuseRequest : std::uint8_t {
    Lookup,
    Forget,  // FORGET and BATCH_FORGET messages (no reply)
    Getattr,
    Open,
    Read,
    Release,
    Opendir,
    Readdir,
    Readdirplus,
    Releasedir,
    Statfs,
    Getxattr,
    Listxattr,
    Access,
    Refused,  // every request that would change something (answered EROFS)
};
inline constexpr std::array<std::string_view, 15> kFuseRequestNames{
    "lookup",  "forget",      "getattr",    "open",   "read",     "release",   "opendir", "readdir",
    "readdirplus", "releasedir", "statfs", "getxattr", "listxattr", "access", "refused"};

class FuseRequestCounters {
public:
    void add(FuseRequest request) { counters_[static_cast<std::size_t>(request)].add(1); }
    std::uint64_t get(std::size_t index) const { return counters_[index].get(); }

private:
    std::array<Counter, kFuseRequestNames.size()> counters_;
};

// Counters kept per stored dtype ("BF16", "Q4_K"). The dtypes are registered while the mount is set up, before
// any reader counts; counting and reading are lock-free afterwards.
class DtypeCounters {
public:
    // The counter of `dtype`, registered if new. Not thread-safe: for the setup only.
    Counter& of(std::string_view dtype);
    void for_each(const std::function<void(const std::string& dtype, const Counter&)>& visit) const;

private:
    std::map<std::string, Counter, std::less<>> counters_;  // node-based: a Counter never moves
};

struct Stats {
    FileKindCounters raw, dequant_f32, dequant_npy, dequant_bf16, dequant_f16, model_safetensors, json;
    FileKindCounters source_files;  // side files and the files of source/
    // A wait is a read that found its chunk being decoded by another thread and took that decode (also a hit).
    Counter cache_hits, cache_misses, cache_waits, cache_evictions, cache_decoded_ahead;
    Counter bytes_decoded, decode_nanoseconds;   // bytes of float32 decoded (also for the 16-bit views)
    DtypeCounters bytes_decoded_by_dtype;  // the same, by the tensor's stored dtype
    Counter read_errors;     // reads answered with an error
    Counter reply_errors;    // replies the kernel did not take (reader gone, or a source page it could not copy)
    std::atomic<std::uint64_t> cache_bytes_in_use{0};
    std::uint64_t cache_budget = 0;
    std::uint64_t cache_chunk_bytes = 0;   // the usual size of a decoded chunk
    std::uint64_t decode_workers = 0;      // threads that decode ahead of sequential readers
    std::string decode_kernels;            // the kernel path in use ("avx512", "avx2", "portable")
    std::shared_ptr<RemoteCounters> remote = std::make_shared<RemoteCounters>();
    FuseRequestCounters requests;
    // Time from a read request's arrival to its reply, by what was read: raw (and the side files and source/, which
    // are source bytes too), the dequant views (16-bit ones too), the JSON files, model.safetensors.
    LatencyHistogram raw_read_latency, dequant_read_latency, meta_read_latency, model_read_latency;
    // Where the mount is, as every metric's `mountpoint` label says (none when empty): node_exporter merges the
    // files of several mounts into one set of series.
    std::string mountpoint;
    // Which daemon serves what, for `tensorfs status`: the SOURCE as /proc/mounts shows it (no password), and
    // when the mount was made (seconds since the epoch). stats.json adds the pid of the process rendering it.
    std::string source;
    std::int64_t started_unix_seconds = 0;

    // The counters as JSON, padded with spaces to kStatsJsonSize so that stat() of stats.json is exact.
    std::string render_json() const;
    // The counters in Prometheus' text exposition format (format 0.0.4), padded with a last comment line to
    // metrics_size() so that stat() of the metrics file is exact.
    std::string render_prometheus() const;
    // The size of render_prometheus(): the longest text the counters can give, fixed once the dtypes are
    // registered and the mountpoint set.
    std::size_t metrics_size() const;
};

// The size stats.json always has.
inline constexpr std::size_t kStatsJsonSize = 4096;

}  // namespace tensorfs
