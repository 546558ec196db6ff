#include "volume_mounts.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

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
                             ? "the daemon serving this volume is gone (publish it again: restart the pod)"
                             : std::string("statfs: ") + std::strerror(result.error);
    } else if (result.output.size() == 3 * sizeof(std::uint64_t)) {
        std::uint64_t numbers[3];
        std::memcpy(numbers, result.output.data(), sizeof numbers);
        health.bytes = numbers[0] * numbers[1];
        health.inodes = numbers[2];
    }
    return health;
}

std::optional<DaemonProcess> serving_daemon(const std::string& target) {
    const std::string stats = target + "/.tensorfs/stats.json";
    const BoundedResult result = run_bounded(kAnswerLimit, [&](int out) {
        const int fd = ::open(stats.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return errno;
        char buffer[8192];
        ssize_t got;
        while ((got = ::read(fd, buffer, sizeof buffer)) > 0) {
            if (::write(out, buffer, static_cast<std::size_t>(got)) != got) break;
        }
        ::close(fd);
        return got == 0 ? 0 : EIO;
    });
    if (!result.finished || result.error != 0) return std::nullopt;
    const nlohmann::json document = nlohmann::json::parse(result.output, nullptr, false);
    if (!document.is_object() || !document.contains("daemon") || !document["daemon"].contains("pid")) {
        return std::nullopt;
    }
    const auto& pid = document["daemon"]["pid"];
    return pid.is_number_integer() ? daemon_process(pid.get<pid_t>()) : std::nullopt;
}

std::string clear_target(const std::string& target, const std::optional<DaemonProcess>& daemon) {
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
    // With its last mount gone, the daemon ends by itself, unless the filesystem is still held elsewhere (a mount
    // namespace where a reader is stuck): then it is ended, and every read waiting on it fails.
    if (daemon) {
        const auto grace_end = Clock::now() + kDaemonGrace;
        while (is_running(*daemon) && left_until(grace_end) > milliseconds(0)) std::this_thread::sleep_for(kPollPause);
        if (is_running(*daemon)) ::kill(daemon->pid, SIGKILL);
    }
    return {};
}

}  // namespace tensorfs::csi
