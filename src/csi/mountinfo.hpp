// The mounts of the plugin's mount namespace, from /proc/self/mountinfo: read without touching any mount, so that a
// mount whose daemon died or hangs is seen as it is.
#pragma once

#include <string>
#include <vector>

namespace tensorfs::csi {

struct MountEntry {
    std::string mountpoint;
    std::string fstype;  // "fuse.tensorfs" for ours
    std::string source;  // what tensorfs names it: the SOURCE (absolute for a local one), without credentials
    unsigned minor = 0;  // its device's minor number: for a FUSE mount, its connection in /sys/fs/fuse/connections
};

// The mounts at `path` (an absolute path without symbolic links), the one on top last.
std::vector<MountEntry> mounts_at(const std::string& path);

// `path` with the symbolic links of its parent folder resolved (the parent must exist; the last part is kept as it
// is, never looked up: it may be a mount whose daemon does not answer). `path` itself when the parent cannot be.
std::string resolved_target(const std::string& path);

}  // namespace tensorfs::csi
