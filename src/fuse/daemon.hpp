// Taking a fresh mount to service: the kernel's read-ahead for it raised, and the server sent to the background
// only once the mount answers, so that `tensorfs mount` returning 0 means a reader gets full-speed reads at once.
#pragma once

#include <functional>
#include <string>

namespace tensorfs {

// Waits until the mount at `mountpoint` answers (a stat of its root, which its server must be serving already),
// then raises its read-ahead to `read_ahead_kb` so that sequential reads reach the server as large requests (the
// kernel starts at 128 KiB and lowers, never raises, the value to what the server's init reply allows; only root
// may raise it, after init). Returns false when the mount failed to answer; a refused raise is ignored.
bool wait_and_raise_read_ahead(const std::string& mountpoint, unsigned read_ahead_kb);

// Forks. Returns in the child, which becomes the daemon (new session, working folder "/", standard streams on
// /dev/null). The parent never returns: it exits with 0 once the mount answers (see wait_and_raise_read_ahead),
// or runs `unmount` and exits with 2 if the daemon died first.
void daemonize_when_mounted(const std::string& mountpoint, unsigned read_ahead_kb,
                            const std::function<void()>& unmount);

}  // namespace tensorfs
