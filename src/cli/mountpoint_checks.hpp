// What `mount` and `umount` check about MOUNTPOINT before asking the kernel, to say in words what went wrong.
#pragma once

#include <string>

namespace tensorfs::cli {

// 0 when `mountpoint` can take a mount (a folder that is neither a tensorfs mount already nor inside one); else
// prints `tensorfs: DIR: WHY` and returns 2. Warns, and returns 0, for a folder that is not empty.
int check_mountpoint(const std::string& mountpoint);

// 0 when `mountpoint` is a tensorfs mount with no mount inside it; else prints `tensorfs: DIR: WHY` (no such folder,
// not mounted, what is mounted there, the mounts inside it) and returns 2.
int check_unmountable(const std::string& mountpoint);

}  // namespace tensorfs::cli
