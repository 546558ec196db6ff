// The daemon that serves a published volume, known by its pid and its start time: a pid alone may name another
// process once the daemon ended.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace tensorfs::csi {

struct DaemonProcess {
    pid_t pid = 0;
    std::uint64_t start = 0;  // when it started, in clock ticks since boot (/proc/PID/stat, field 22)
};

// The daemon `pid` as it is now, or nullopt when there is no such process.
std::optional<DaemonProcess> daemon_process(pid_t pid);

// Whether `daemon` is still running (the same pid with the same start time).
bool is_running(const DaemonProcess& daemon);

}  // namespace tensorfs::csi
