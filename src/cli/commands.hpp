// The subcommands of the `tensorfs` program. Each takes its own arguments (after the subcommand's name)
// and returns the process exit status: 0 success, 1 invalid source or usage, 2 the mount itself failed.
#pragma once

#include <string>
#include <vector>

namespace tensorfs::cli {

using Arguments = std::vector<std::string>;

int mount_command(const Arguments& args);
int umount_command(const Arguments& args);
int validate_command(const Arguments& args);

// Prints `tensorfs: MESSAGE` and the hint to run --help; returns 1.
int usage_error(const std::string& message);

}  // namespace tensorfs::cli
