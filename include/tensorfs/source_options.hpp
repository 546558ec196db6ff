// How a SOURCE is reached beyond its name: settings of the remote layer (the disk cache) and where it counts what
// it does. Local sources ignore them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
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

struct SourceOptions {
    // Where fetched blocks are kept, shared by every mount and command that uses the same folder. Empty: the
    // default, $XDG_CACHE_HOME/tensorfs (else ~/.cache/tensorfs). Made absolute when the source is opened, before
    // a daemon changes its working folder.
    std::filesystem::path cache_dir;
    // Bytes the cache folder may hold (least recently used blocks go first); 0 turns the disk cache off.
    std::uint64_t disk_cache_size = kDefaultDiskCacheSize;
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
    // Where the remote layer counts requests, bytes, retries, cache hits; nullptr: counted nowhere visible.
    std::shared_ptr<RemoteCounters> counters;
};

// proxy=URL and header=NAME:VALUE, checked and put into `options` (any front end that takes mount options uses
// these). Each returns an error message for a user, or "" when it took the value.
std::string take_proxy(std::string_view url, SourceOptions& options);
std::string take_header(std::string_view name_value, SourceOptions& options);

// $XDG_CACHE_HOME/tensorfs, else $HOME/.cache/tensorfs, else the user's home from the password database.
std::filesystem::path default_cache_dir();

}  // namespace tensorfs
