#include "log.hpp"

#include <syslog.h>

#include <chrono>
#include <cstdio>
#include <mutex>

namespace tensorfs::remote {
namespace {

std::mutex log_mutex;
bool stderr_only = false;
std::string line_prefix = "tensorfs";

using Clock = std::chrono::steady_clock;
constexpr auto kFailedReadPause = std::chrono::seconds(5);
Clock::time_point last_failed_read_line{};
bool failed_read_logged = false;
unsigned long failed_reads_unsaid = 0;

void write_line(const std::string& line) {
    std::fprintf(stderr, "%s: %s\n", line_prefix.c_str(), line.c_str());
    std::fflush(stderr);
    if (!stderr_only) ::syslog(LOG_WARNING, "%s: %s", line_prefix.c_str(), line.c_str());
}

}  // namespace

void log_warning(const std::string& line) {
    const std::lock_guard lock(log_mutex);
    write_line(line);
}

void log_to_stderr_only(const std::string& prefix) {
    const std::lock_guard lock(log_mutex);
    stderr_only = true;
    line_prefix = "tensorfs: " + prefix;
}

void log_failed_read(const std::string& what) {
    const std::lock_guard lock(log_mutex);
    const auto now = Clock::now();
    if (failed_read_logged && now - last_failed_read_line < kFailedReadPause) {
        ++failed_reads_unsaid;
        return;
    }
    std::string line = "read failed (EIO): " + what;
    if (failed_reads_unsaid > 0) {
        line += " (and " + std::to_string(failed_reads_unsaid) + " more failed reads since the last line)";
    }
    write_line(line);
    failed_read_logged = true;
    last_failed_read_line = now;
    failed_reads_unsaid = 0;
}

}  // namespace tensorfs::remote
