// The subcommands of the `tensorfs` program. Each takes its own arguments (after the subcommand's name)
// and returns the process exit status: 0 success, 1 invalid source or usage, 2 the mount itself failed.
#pragma once

#include <string>
#include <vector>

#include "tensorfs/settings.hpp"

namespace tensorfs::cli {

using Arguments = std::vector<std::string>;

int mount_command(const Arguments& args);
int umount_command(const Arguments& args);
int validate_command(const Arguments& args);
int ls_command(const Arguments& args);
int info_command(const Arguments& args);
int cat_command(const Arguments& args);
int convert_command(const Arguments& args);
int stats_command(const Arguments& args);
// Returns 2 on an error, as cmp and diff do.
int diff_command(const Arguments& args);
int status_command(const Arguments& args);
int cache_command(const Arguments& args);
int prefetch_command(const Arguments& args);
// Runs the CSI node plugin (an executable of its own) and keeps it running.
int csi_command(const Arguments& args);

// `ls --files`: the side files and source/ files a mount of SOURCE (with -o model=`model`) shows (`json`: as a
// JSON document).
int ls_files(const std::string& source, const Settings& settings, bool json);

// Prints the one line `tensorfs: MESSAGE; try 'tensorfs --help'`; returns 1.
int usage_error(const std::string& message);

// Prints the one line `tensorfs: MESSAGE`; returns 1.
int failure(const std::string& message);

}  // namespace tensorfs::cli
