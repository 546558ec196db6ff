// Lines for the daemon's log. By default they go to its standard error (seen with -f) and to syslog (a background
// daemon's stderr is /dev/null). A daemon given a log descriptor (mount option log_fd=N, which the Kubernetes
// plugin's mount holder passes: its own stderr, the container's log) writes them there alone, one line per event,
// each naming the volume and its SOURCE (set_log_prefix), and never to syslog.
#pragma once

#include <string>

namespace tensorfs::remote {

void log_warning(const std::string& line);

// From now on, lines go to stderr alone (no syslog), each after `prefix` ("volume ID (SOURCE)").
void log_to_stderr_only(const std::string& prefix);

// A read that failed (its reply is EIO): logged at once, then at most one line per 5 s, which counts the
// failures since the line before (a reader the kernel retries page by page fails many reads in a row).
void log_failed_read(const std::string& what);

}  // namespace tensorfs::remote
