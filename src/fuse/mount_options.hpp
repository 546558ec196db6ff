// The words of `-o OPT[,OPT...]` lists, as the command line, mount(8), mount.fuse3 and fstab pass them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tensorfs/mount.hpp"

namespace tensorfs {

// Takes out tensorfs's own options (cache_size=, threads=, export_dtype=, model=, cache_dir=, disk_cache_size=,
// max_connections=, readahead=, timeout=, proxy=, header=, log_fd=, log_id=, secrets_socket=, csi_volume=), drops
// the ones that mean nothing for a read-only FUSE mount (ro, rw, defaults, noauto, nofail, _netdev, x-*,
// relatime, ...) and hands the rest to libfuse, refusing any that libfuse does not take either. Returns an error
// message, or an empty string.
std::string take_option_list(std::string_view list, MountOptions& options);

// 1 to 1024.
std::optional<unsigned> parse_threads(std::string_view text);

}  // namespace tensorfs
