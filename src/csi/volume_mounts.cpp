#include "volume_mounts.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
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

// The abort file of a mount's FUSE connection, opened while the mount is there and so known to be its. Connection
// numbers are reused at once: once this one ends, the next mount anywhere on the node may get its number, and an
// abort written to the path would end that mount. The kernel ties an open control file to its own connection, so a
// write through this one aborts the connection it was opened for, or nothing once that has ended.
class ConnectionAbort {
public:
    explicit ConnectionAbort(unsigned connection)
        : folder_(std::string(kFuseConnections) + "/" + std::to_string(connection)),
          fd_(::open((folder_ + "/abort").c_str(), O_WRONLY | O_CLOEXEC)) {}
    ConnectionAbort(const ConnectionAbort&) = delete;
    ConnectionAbort& operator=(const ConnectionAbort&) = delete;
    ~ConnectionAbort() {
        if (fd_ >= 0) ::close(fd_);
    }

    // Waits until the connection ends by itself, at most until `deadline`; aborts it if it has not.
    void abort_unless_ended_by(Clock::time_point deadline) const {
        while (!ended() && left_until(deadline) > milliseconds(0)) std::this_thread::sleep_for(kPollPause);
        if (ended()) return;
        const int fd = fd_;
        run_bounded(kUnmountLimit, [fd](int) { return ::write(fd, "1", 1) == 1 ? 0 : EIO; });
    }

private:
    // Whether the connection is gone: its folder is, or holds another connection's files (its number reused).
    bool ended() const {
        struct stat mine {};
        struct stat now {};
        if (fd_ < 0 || ::fstat(fd_, &mine) != 0) return true;  // nothing of it to abort
        return ::stat((folder_ + "/abort").c_str(), &now) != 0 || now.st_ino != mine.st_ino;
    }

    std::string folder_;
    int fd_;
};

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
    // The FUSE connections of the mounts at the target, their abort files opened before they are unmounted.
    std::vector<std::unique_ptr<ConnectionAbort>> connections;
    for (const auto& mount : mounts_at(target)) {
        if (mount.fstype.starts_with("fuse")) connections.push_back(std::make_unique<ConnectionAbort>(mount.minor));
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
    for (const auto& connection : connections) connection->abort_unless_ended_by(Clock::now() + kDaemonGrace);
    return {};
}

}  // namespace tensorfs::csi
