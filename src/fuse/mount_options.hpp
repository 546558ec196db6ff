// The words of `-o OPT[,OPT...]` lists, as the command line, mount(8), mount.fuse3 and fstab pass them.
#pragma once

#include <string>
#include <string_view>

#include "tensorfs/mount.hpp"

namespace tensorfs {

// Hands tensorfs's own options (settings.hpp) to take_setting, drops the ones that mean nothing for a read-only FUSE
// mount (ro, rw, defaults, noauto, nofail, _netdev, x-*, relatime, ...) and keeps the rest for libfuse, refusing any
// that libfuse does not take either. Returns an error message, or an empty string.
std::string take_option_list(std::string_view list, MountOptions& options);

}  // namespace tensorfs
