// The signals that end a mount (SIGINT, SIGTERM, SIGHUP: libfuse's handlers end the session loop) must reach the
// loop's own thread, which waits in read() on /dev/fuse and only notices when a signal interrupts that read. The
// kernel hands a process signal to any thread that does not block it, so every helper thread blocks them.
#pragma once

#include <functional>

namespace tensorfs {

// Runs `start`, which starts threads, with those signals blocked: the threads inherit the mask. The caller's own
// mask is restored afterwards.
void start_threads_blocking_exit_signals(const std::function<void()>& start);

}  // namespace tensorfs
