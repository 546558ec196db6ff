#include "volume_mounts.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "bounded_call.hpp"
#include "mountinfo.hpp"

namespace tensorfs::csi {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kUnmountLimit{2000};
// How long a daemon whose mount is gone may take to end by itself (writing its last blocks to the disk cache).
constexpr milliseconds kDaemonGrace{3000};
constexpr milliseconds kPollPause{50};

int unmount(const std::string& target, int flags) {
    const BoundedResult result = run_bounded(kUnmountLimit, [&](int) {
        return ::umount2(target.c_str(), flags | UMOUNT_NOFOLLOW) == 0 ? 0 : errno;
    });
    return result.finished ? result.error : ETIMEDOUT;
}

milliseconds left_until(Clock::time_point deadline) {
    return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

}  // namespace

MountHealth check_mount(const std::string& target) {
    const BoundedResult result = run_bounded(kAnswerLimit, [&](int out) {
        struct statfs figures {};
        if (::statfs(target.c_str(), &figures) != 0) return errno;
        const std::uint64_t numbers[3] = {static_cast<std::uint64_t>(figures.f_blocks),
                                          static_cast<std::uint64_t>(figures.f_frsize),
                                          static_cast<std::uint64_t>(figures.f_files)};
        return ::write(out, numbers, sizeof numbers) == static_cast<ssize_t>(sizeof numbers) ? 0 : EIO;
    });
    MountHealth health;
    if (!result.finished) {
        health.state = MountHealth::State::NotAnswering;
        health.message = "the daemon serving this volume has not answered for " +
                         std::to_string(kAnswerLimit.count()) + " s";
    } else if (result.error != 0) {
        health.state = MountHealth::State::Gone;
        health.message = result.error == ENOTCONN || result.error == ECONNABORTED
                             ? "the daemon serving this volume is gone: its pods read ENOTCONN until they are "
                               "restarted (kubectl delete pod); kubelet's next publish mounts it anew"
                             : std::string("statfs: ") + std::strerror(result.error);
    } else if (result.output.size() == 3 * sizeof(std::uint64_t)) {
        std::uint64_t numbers[3];
        std::memcpy(numbers, result.output.data(), sizeof numbers);
        health.bytes = numbers[0] * numbers[1];
        health.inodes = numbers[2];
    }
    return health;
}

MountHealth unmounted_health() {
    MountHealth health;
    health.state = MountHealth::State::Gone;
    health.message = "the daemon serving this volume is gone, and its mount with it (the mount holder was "
                     "stopped): its pods read ENOTCONN until they are restarted (kubectl delete pod); kubelet's next "
                     "publish mounts it anew";
    return health;
}

std::string ensure_fuse_connections() {
    if (!mounts_at(kFuseConnections).empty()) return {};
    if (::mount("fusectl", kFuseConnections, "fusectl", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) return {};
    return std::string("cannot mount fusectl at ") + kFuseConnections + ": " + std::strerror(errno);
}

std::string clear_target(const std::string& target) {
    // The FUSE connections of the mounts at the target, known before they are unmounted.
    std::vector<unsigned> connections;
    for (const auto& mount : mounts_at(target)) {
        if (mount.fstype.starts_with("fuse")) connections.push_back(mount.minor);
    }
    // A round of the loop takes two unmounts at most, and the daemon its grace after it: all within the bound.
    const auto deadline = Clock::now() + kUnpublishBound - kDaemonGrace - 2 * kUnmountLimit;
    while (!mounts_at(target).empty()) {
        if (Clock::now() >= deadline) return "still mounted: no unmount succeeded in the time there was";
        const int plain = unmount(target, 0);
        if (plain == 0 || plain == EINVAL) continue;  // EINVAL: not a mount any more (someone else unmounted it)
        const int lazy = unmount(target, MNT_DETACH);
        if (lazy != 0 && lazy != EINVAL) {
            return std::string("cannot unmount: ") + std::strerror(lazy);
        }
    }
    // With its last mount gone the connection goes (and the daemon ends by itself, writing what it holds to the
    // disk cache), unless the filesystem is still held elsewhere: then it is aborted.
    for (const unsigned connection : connections) {
        const std::string folder = std::string(kFuseConnections) + "/" + std::to_string(connection);
        const auto grace_end = Clock::now() + kDaemonGrace;
        while (::access(folder.c_str(), F_OK) == 0 && left_until(grace_end) > milliseconds(0)) {
            std::this_thread::sleep_for(kPollPause);
        }
        const std::string abort = folder + "/abort";
        run_bounded(kUnmountLimit, [&](int) {
            const int fd = ::open(abort.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd < 0) return errno;
            const bool written = ::write(fd, "1", 1) == 1;
            ::close(fd);
            return written ? 0 : EIO;
        });
    }
    return {};
}

}  // namespace tensorfs::csi
