#include "request_loop.hpp"

#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

namespace tensorfs {
namespace {

// How long the loop polls for the next request before it sleeps. With polling, a walk's whole round trip (the
// walker's work, the kernel's and ours) takes about 15 us, so this covers a stream with room to spare.
constexpr std::chrono::microseconds kPollFor{100};

// Set by poll_after_this_request while the loop's thread processes a request.
thread_local bool poll_requested = false;

// Whether the request is one of those a client sends only after the answer to the one before: the requests of a
// walk. Reads in general are not: the kernel keeps several in flight for a sequential reader (read-ahead), they go
// to the read workers, and polling after them only takes a CPU from the workers and the reader (raw's first pass
// 5-15% slower). A read answered on the loop's thread asks for polling itself (poll_after_this_request).
bool is_ping_pong(const fuse_buf& request) {
    if ((request.flags & FUSE_BUF_IS_FD) != 0) return false;  // spliced: only a read's data comes that way
    return static_cast<const fuse_in_header*>(request.mem)->opcode != FUSE_READ;
}

// Waits, asleep, until the device has a request (or the session ends, or a signal comes).
void sleep_until_readable(int fd) {
    pollfd wanted{fd, POLLIN, 0};
    ::poll(&wanted, 1, -1);  // EINTR: a signal, after which the caller checks whether the session ended
}

}  // namespace

void poll_after_this_request() { poll_requested = true; }

int run_request_loop(fuse_session* session) {
    const int fd = fuse_session_fd(session);
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return fuse_session_loop(session);

    fuse_buf request{};
    int failure = 0;  // what the device's read failed with, if it did
    auto poll_until = std::chrono::steady_clock::now();
    while (!fuse_session_exited(session)) {
        const int received = fuse_session_receive_buf(session, &request);
        if (received == -EAGAIN) {
            if (std::chrono::steady_clock::now() < poll_until) {
                ::sched_yield();
            } else {
                sleep_until_readable(fd);
            }
            continue;
        }
        if (received == -EINTR) continue;
        if (received < 0) failure = received;
        if (received <= 0) break;  // 0: unmounted (or the session ended)
        poll_requested = false;
        const bool ping_pong = is_ping_pong(request);
        fuse_session_process_buf(session, &request);
        if (ping_pong || poll_requested) poll_until = std::chrono::steady_clock::now() + kPollFor;
    }
    std::free(request.mem);
    fuse_session_reset(session);
    return failure;  // not the last -EAGAIN or -EINTR: a signal that ends the session is a clean end
}

}  // namespace tensorfs
