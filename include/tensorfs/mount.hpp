// Mounting a source: the daemon's whole life, from catalog to unmount.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensorfs/settings.hpp"

namespace tensorfs {

struct MountOptions {
    std::string source;
    std::string mountpoint;
    bool foreground = false;
    bool debug = false;
    bool single_threaded = false;
    std::vector<std::string> fuse_options;   // libfuse's own options, passed to it as `-o` options
    Settings settings;                       // tensorfs's own options (settings.hpp)
};

// Returns the process exit status: 0 after a clean unmount, 1 invalid source or options, 2 the mount failed.
// Without `foreground` it returns in the parent once the mount is ready, leaving the daemon running.
int run_mount(const MountOptions& options);

// Unmounts a tensorfs mount (also one whose daemon died). Returns an exit status.
int run_umount(const std::string& mountpoint);

}  // namespace tensorfs
