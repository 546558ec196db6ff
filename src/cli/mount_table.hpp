// The tensorfs mounts of this machine, from /proc/self/mountinfo: found without touching the mounts themselves, so
// that a mount whose daemon died (every access fails, or waits) never holds a command up.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tensorfs::cli {

struct MountEntry {
    std::string mountpoint;  // absolute, as the kernel shows it
    std::string source;      // the fsname tensorfs gave it: the SOURCE without any password
    std::string type;        // "fuse.tensorfs" for ours
};

// Every mount of the machine (this process's mount namespace), in mount order.
std::vector<MountEntry> all_mounts();

// Only those of type fuse.tensorfs.
std::vector<MountEntry> tensorfs_mounts();

// `path` made absolute and normal without asking a mount (its parent folder is resolved, not the path itself).
std::string absolute_path_of(const std::string& path);

// The mount whose mount point is `path` (the topmost one), if any.
std::optional<MountEntry> mount_at(const std::string& path);

// The innermost tensorfs mount whose tree holds `path` (a path resolved already, absolute), if any.
std::optional<MountEntry> tensorfs_mount_holding(const std::string& path);

// The mounts whose mount points lie inside the folder `mountpoint` (absolute), in mount order.
std::vector<MountEntry> mounts_inside(const std::string& mountpoint);

// What status and stats say of a tensorfs mount whose daemon is gone: "MOUNTPOINT: its daemon is gone; clear the
// mount with: COMMAND", and that command.
std::string dead_mount_line(const std::string& mountpoint);
std::string dead_mount_clearing(const std::string& mountpoint);

}  // namespace tensorfs::cli
