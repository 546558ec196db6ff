// `tensorfs mount --secrets-fd N`: credentials handed over by the program that starts tensorfs (the CSI plugin)
// through an inherited descriptor, so that they appear in no command line, no environment block and no file.
#pragma once

#include <string>

#include "tensorfs/mount.hpp"

namespace tensorfs::cli {

// Reads descriptor `fd` to its end (at most 64 KiB) and closes it. It holds one JSON object of strings, the
// secrets of src/remote/secrets.hpp: HF_TOKEN, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME, AWS_WEB_IDENTITY_TOKEN, and `username` and `password` for an http(s)://
// SOURCE (sent to its host as HTTP basic authentication). They are kept in this process's memory, in the place of
// the environment variables of the same names (never in its environment, which /proc/PID/environ shows), and a
// running daemon takes new ones at its secrets socket (mount option secrets_socket=). Returns an error message for
// a user (never quoting a value), or "".
std::string take_secrets(int fd, MountOptions& options);

}  // namespace tensorfs::cli
