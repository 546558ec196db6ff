// The arguments of one subcommand, split into its flags and its positional words.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "tensorfs/settings.hpp"

namespace tensorfs::cli {

struct SplitArguments {
    std::vector<std::string> positional;
    std::vector<std::string> flags;            // in the order given, each one of `known_flags`
    std::map<std::string, std::string> values;  // flags that take a value (`--cache-dir DIR`), the last one given
    std::string error;                          // set when a word looks like a flag but is not a known one

    bool has(std::string_view flag) const;
};

// Words starting with '-' are flags and must be in `known_flags` or `flags_with_values` (which take the next
// word as their value); `--` ends the flags; a lone `-` is positional.
SplitArguments split_arguments(const Arguments& args, std::initializer_list<std::string_view> known_flags,
                               const std::vector<std::string_view>& flags_with_values = {});

// "" when `positional` holds one word for each of `names` ({"SOURCE", "TENSOR"}); else the usage problem:
// "cat needs SOURCE and TENSOR", or "cat: unexpected argument 'X'" naming the first word too many.
std::string positional_problem(std::string_view command, const std::vector<std::string>& positional,
                               std::initializer_list<std::string_view> names);

// The flags every command that reads a SOURCE takes: --model PATH (the model to read in a folder that holds
// several, as -o model=PATH picks the one to mount), for remote sources --cache-dir DIR, --disk-cache-size SIZE,
// --timeout SECONDS, and -o OPT[,OPT...] with the mount's options (proxy=, header=, max_connections=...; the
// others change nothing).
inline const std::vector<std::string_view> kSourceFlags = {"--model", "--cache-dir", "--disk-cache-size", "--timeout",
                                                           "-o"};

// The values of -o, --model, --cache-dir, --disk-cache-size and --timeout put into `settings` (a flag wins over
// the -o option of the same name); returns an error message, or "".
std::string take_source_flags(const SplitArguments& split, Settings& settings);

}  // namespace tensorfs::cli
