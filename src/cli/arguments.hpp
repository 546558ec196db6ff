// The arguments of one subcommand, split into its flags and its positional words.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"

namespace tensorfs::cli {

struct SplitArguments {
    std::vector<std::string> positional;
    std::vector<std::string> flags;  // in the order given, each one of `known_flags`
    std::string error;               // set when a word looks like a flag but is not a known one

    bool has(std::string_view flag) const;
};

// Words starting with '-' are flags and must be in `known_flags`; `--` ends the flags; a lone `-` is positional.
SplitArguments split_arguments(const Arguments& args, std::initializer_list<std::string_view> known_flags);

}  // namespace tensorfs::cli
