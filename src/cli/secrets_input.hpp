// `tensorfs mount --secrets-fd N`: credentials handed over by the program that starts tensorfs (the CSI plugin)
// through an inherited descriptor, so that they appear in no command line, no environment block and no file.
#pragma once

#include <string>

#include "tensorfs/mount.hpp"

namespace tensorfs::cli {

// Reads descriptor `fd` to its end (at most 64 KiB) and closes it. It holds one JSON object of strings:
// HF_TOKEN, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN (each set in this process's environment,
// where the remote layer reads it: setenv copies to the heap, so /proc/PID/environ, which shows the block the
// process started with, never holds them), and `username` and `password` for an http(s):// SOURCE (put into
// `options.source`, which /proc/mounts, messages and the stats show without them). Returns an error message for a
// user (never quoting a value), or "".
std::string take_secrets(int fd, MountOptions& options);

}  // namespace tensorfs::cli
