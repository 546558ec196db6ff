// The lines of `tensorfs --help` that list tensorfs's own -o options, made from the parser's list
// (tensorfs_options()), so that the help names every option the parser takes and no other.
#pragma once

#include <string>

namespace tensorfs::cli {

// "                       cache_size=SIZE   memory for...\n" for each option a user gives, then one line naming the
// options the CSI plugin sets.
std::string tensorfs_options_help();

}  // namespace tensorfs::cli
