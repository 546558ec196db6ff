// Looking at and taking down the mount at a target, each within a bound: every call that reaches the mount runs in
// a child process given up on in time (bounded_call.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "daemon_process.hpp"

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

// The daemon serving the mount at `target`, from its .tensorfs/stats.json; nullopt when it cannot be read.
std::optional<DaemonProcess> serving_daemon(const std::string& target);

// Unmounts every mount at `target`: a plain unmount first; one that is busy or does not answer is detached
// (lazily), and a daemon that still runs then (someone still holds the filesystem: a reader stuck on a server that
// stopped answering) is killed, which fails every read still waiting on it. Returns within kUnpublishBound; an
// error message when a mount is still there, else "".
std::string clear_target(const std::string& target, const std::optional<DaemonProcess>& daemon);

}  // namespace tensorfs::csi
