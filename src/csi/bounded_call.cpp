#include "bounded_call.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace tensorfs::csi {
namespace {

using Clock = std::chrono::steady_clock;

// A child that was given up on is waited for by a thread of its own, so that it leaves no zombie once the kernel
// lets it go (its daemon answered, or died).
void reap_later(pid_t pid) {
    std::thread([pid] {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }).detach();
}

int milliseconds_left(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left > 0 ? static_cast<int>(left) : 0;
}

}  // namespace

BoundedResult run_bounded(std::chrono::milliseconds limit, const std::function<int(int out)>& call) {
    BoundedResult result;
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        result.finished = true;
        result.error = errno;
        return result;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        result.finished = true;
        result.error = errno;
        ::close(pipe_fds[0]);
        ::close(pipe_fds[1]);
        return result;
    }
    if (pid == 0) {
        ::close(pipe_fds[0]);
        ::_exit(call(pipe_fds[1]) & 0xff);
    }
    ::close(pipe_fds[1]);
    const auto deadline = Clock::now() + limit;
    // The output, until the child closes its end (it exits) or the time is up.
    for (;;) {
        pollfd ready{pipe_fds[0], POLLIN, 0};
        const int polled = ::poll(&ready, 1, milliseconds_left(deadline));
        if (polled < 0 && errno == EINTR) continue;
        if (polled <= 0) break;
        char buffer[4096];
        const ssize_t got = ::read(pipe_fds[0], buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        result.output.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(pipe_fds[0]);
    for (;;) {
        int status = 0;
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) {
            result.finished = true;
            result.error = WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
            return result;
        }
        if (done < 0 && errno != EINTR) break;
        if (milliseconds_left(deadline) == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(pid, SIGKILL);
    reap_later(pid);
    result.output.clear();
    return result;
}

}  // namespace tensorfs::csi
