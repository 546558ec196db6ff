#include "libfuse.hpp"

#include <cstdarg>
#include <cstdio>
#include <memory>
#include <vector>

#include <fuse_lowlevel.h>

namespace tensorfs {
namespace {

void discard_log(fuse_log_level, const char*, va_list) {}

}  // namespace

bool libfuse_accepts(const std::string& option) {
    std::string program = "tensorfs", dash_o = "-o", value = option;
    std::vector<char*> argv = {program.data(), dash_o.data(), value.data()};
    fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
    const fuse_lowlevel_ops no_operations{};
    // libfuse would print its own message for an unknown option; the caller prints ours instead.
    fuse_set_log_func(discard_log);
    fuse_session* session = fuse_session_new(&args, &no_operations, sizeof no_operations, nullptr);
    fuse_set_log_func(nullptr);
    fuse_opt_free_args(&args);
    if (session == nullptr) return false;
    fuse_session_destroy(session);
    return true;
}

void print_libfuse_help() { fuse_lowlevel_help(); }

void print_versions() {
    // fuse_lowlevel_version() prints a line, then runs `fusermount3 --version` on the same stdout: line
    // buffering (set before anything is written, as setvbuf requires) keeps the lines in order in a pipe too.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    std::printf("tensorfs %s\n", TENSORFS_VERSION);
    std::printf("libfuse %s\n", fuse_pkgversion());
    fuse_lowlevel_version();
}

}  // namespace tensorfs
