// How a SOURCE is reached beyond its name: settings of the remote layer (the disk cache) and where it counts what
// it does. Local sources ignore them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "tensorfs/stats.hpp"

namespace tensorfs {

// 10 GiB, the default of disk_cache_size=.
inline constexpr std::uint64_t kDefaultDiskCacheSize = std::uint64_t{10} << 30;

struct SourceOptions {
    // Where fetched blocks are kept, shared by every mount and command that uses the same folder. Empty: the
    // default, $XDG_CACHE_HOME/tensorfs (else ~/.cache/tensorfs). Made absolute when the source is opened, before
    // a daemon changes its working folder.
    std::filesystem::path cache_dir;
    // Bytes the cache folder may hold (least recently used blocks go first); 0 turns the disk cache off.
    std::uint64_t disk_cache_size = kDefaultDiskCacheSize;
    // Where the remote layer counts requests, bytes, retries, cache hits; nullptr: counted nowhere visible.
    std::shared_ptr<RemoteCounters> counters;
};

// $XDG_CACHE_HOME/tensorfs, else $HOME/.cache/tensorfs, else the user's home from the password database.
std::filesystem::path default_cache_dir();

}  // namespace tensorfs
