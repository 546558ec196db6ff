// What the CLI asks libfuse itself: which mount options it takes, its own help and version lines.
#pragma once

#include <string>

namespace tensorfs {

// True when libfuse's session takes `-o OPTION` (asked by a session that is created, never mounted, and
// destroyed), so that an unknown option is refused with one clear line before anything is opened.
bool libfuse_accepts(const std::string& option);

// libfuse's lines for `--help`: its mount options.
void print_libfuse_help();

// `--version`: tensorfs, libfuse, the FUSE kernel interface and fusermount3. Must be the first output of the process.
void print_versions();

}  // namespace tensorfs
