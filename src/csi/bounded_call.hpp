// System calls that touch a FUSE mount, made in a child process that is given up on after a time limit. A call on
// a mount whose daemon does not answer waits in the kernel (unkillable once the daemon took the request), and must
// not take a gRPC thread, and the plugin's answer, with it.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace tensorfs::csi {

struct BoundedResult {
    bool finished = false;  // false: the limit passed first (the child was killed, and is reaped when it can be)
    int error = 0;          // the errno the call ended with, 0 on success
    std::string output;     // what the call wrote to its descriptor
};

// Runs `call(out)` in a forked child. `call` may use only async-signal-safe functions (the plugin has threads):
// system calls on paths, write(out, ...). It returns 0 or an errno value, which becomes the child's exit status.
BoundedResult run_bounded(std::chrono::milliseconds limit, const std::function<int(int out)>& call);

}  // namespace tensorfs::csi
