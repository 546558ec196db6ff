// How a SOURCE is reached beyond its name: settings of the remote layer (the disk cache) and where it counts what
// it does. Local sources ignore them.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorfs/stats.hpp"

namespace tensorfs {

// 10 GiB, the default of disk_cache_size=.
inline constexpr std::uint64_t kDefaultDiskCacheSize = std::uint64_t{10} << 30;

// Defaults of max_connections= and readahead= (docs/benchmarks.md, section "load", has the measurements).
inline constexpr unsigned kDefaultMaxConnections = 16;
inline constexpr std::uint64_t kDefaultReadahead = std::uint64_t{64} << 20;
// The most of max_connections=: threads of the process's fetch pool.
inline constexpr unsigned kMostConnections = 64;
// Fetched blocks in memory (in flight, kept for readers, queued for the disk) when nobody says otherwise.
inline constexpr std::uint64_t kDefaultRemoteMemory = std::uint64_t{128} << 20;
// The default of timeout=: how long one read may wait for the network, retries included. Long enough for a read
// that waits behind the read-ahead on a link of a few MB/s; short enough that a pod whose server died is never held
// past Kubernetes' default grace period of 30 s before SIGKILL (a process in a page fault cannot die before its
// read is answered).
inline constexpr std::chrono::milliseconds kDefaultTimeout{20'000};
// The longest timeout= taken: a day.
inline constexpr std::chrono::milliseconds kLongestTimeout{86'400'000};

struct SourceOptions {
    // Where fetched blocks are kept, shared by every mount and command that uses the same folder. Empty: the
    // default, $XDG_CACHE_HOME/tensorfs (else ~/.cache/tensorfs). Made absolute when the source is opened, before
    // a daemon changes its working folder.
    std::filesystem::path cache_dir;
    // Bytes the cache folder may hold (least recently used blocks go first); 0 turns the disk cache off.
    std::uint64_t disk_cache_size = kDefaultDiskCacheSize;
    // Whole blocks go to the disk cache around the page cache (O_DIRECT): for a process that keeps what it read in
    // its own memory (the Python module), where the cache file's pages would be a second copy of every byte in new
    // page cache. A mount writes through the page cache: its next mount reads the cache from memory.
    bool disk_cache_writes_direct = false;
    // Range requests in flight at once for read-ahead (1 to kMostConnections), and how far ahead of a sequential
    // reader blocks are fetched at most.
    unsigned max_connections = kDefaultMaxConnections;
    std::uint64_t readahead = kDefaultReadahead;
    // What fetched blocks in memory may hold together: in flight, kept for readers, queued for the disk cache. A
    // mount gives it half of cache_size (the decoded chunks get the other half).
    std::uint64_t memory_budget = kDefaultRemoteMemory;
    // proxy=URL: the HTTP proxy every request goes through, whatever http_proxy, HTTPS_PROXY and ALL_PROXY say
    // (hosts in NO_PROXY still go direct, as libcurl and curl have it). Empty: those variables decide.
    std::string proxy;
    // header=NAME:VALUE: headers every request carries, to every host (for a proxy that reads them, such as
    // Dragonfly's X-Dragonfly-Use-P2P), as "NAME: VALUE".
    std::vector<std::string> headers;
    // How long one read may wait for the network, retries and backoff included (timeout=): past it the read fails
    // with an I/O error. Every request of the remote layer is bounded by it, from opening a source on.
    std::chrono::milliseconds timeout = kDefaultTimeout;
    // Where the remote layer counts requests, bytes, retries, cache hits; nullptr: counted nowhere visible.
    std::shared_ptr<RemoteCounters> counters;
};

// proxy=URL and header=NAME:VALUE, checked and put into `options` (any front end that takes mount options uses
// these). Each returns an error message for a user, or "" when it took the value. `kubernetes`: the options are a
// Kubernetes volume's, whose credentials go in its Secret (so the refusal of an Authorization header says).
std::string take_proxy(std::string_view url, SourceOptions& options);
std::string take_header(std::string_view name_value, SourceOptions& options, bool kubernetes);
// timeout='s value: seconds, a fraction allowed ("20", "2.5"), more than 0 and at most kLongestTimeout; nullopt
// when it is not such a number.
std::optional<std::chrono::milliseconds> parse_timeout(std::string_view seconds);

// $XDG_CACHE_HOME/tensorfs, else $HOME/.cache/tensorfs, else the user's home from the password database.
std::filesystem::path default_cache_dir();

}  // namespace tensorfs
