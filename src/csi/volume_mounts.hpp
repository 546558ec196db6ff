// Looking at and taking down the mount at a target, each within a bound: every call that reaches the mount runs in
// a child process given up on in time (bounded_call.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>


namespace tensorfs::csi {

// How long a statfs of a mount may take before its daemon counts as not answering.
inline constexpr std::chrono::seconds kAnswerLimit{3};
// The most NodeUnpublishVolume takes, whatever the state of the mount (the README documents it).
inline constexpr std::chrono::seconds kUnpublishBound{10};

struct MountHealth {
    enum class State { Serving, Gone, NotAnswering } state = State::Serving;
    std::uint64_t bytes = 0;   // the model's size (statfs: blocks × block size)
    std::uint64_t inodes = 0;  // files and folders in the tree
    std::string message;       // why it is not serving
};

// statfs of the mount at `target` (which must be one): it always reaches the daemon.
MountHealth check_mount(const std::string& target);

// The health of a published volume whose mount is gone: its daemon ended and unmounted it.
MountHealth unmounted_health();

// Where the kernel's FUSE connections are (fusectl); the plugin mounts it there when it is not (a container's /sys).
inline constexpr const char* kFuseConnections = "/sys/fs/fuse/connections";

// Mounts fusectl at kFuseConnections unless it is there. "" or why it could not.
std::string ensure_fuse_connections();

// Unmounts every mount at `target`: a plain unmount first; one that is busy or does not answer is detached
// (lazily). When its FUSE connection still exists then (someone still holds the filesystem: a reader stuck on a
// server that stopped answering, in a mount namespace of its own), the connection is aborted, which fails every
// read still waiting on it and ends the daemon, wherever the daemon runs (in the mount holder's container, whose
// processes the plugin cannot see). Returns within kUnpublishBound; an error message when a mount is still there,
// else "".
std::string clear_target(const std::string& target);

}  // namespace tensorfs::csi
