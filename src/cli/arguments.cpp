#include "arguments.hpp"

#include <algorithm>

namespace tensorfs::cli {

bool SplitArguments::has(std::string_view flag) const {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

SplitArguments split_arguments(const Arguments& args, std::initializer_list<std::string_view> known_flags) {
    SplitArguments split;
    bool flags_ended = false;
    for (const std::string& arg : args) {
        if (flags_ended || arg == "-" || !arg.starts_with("-")) {
            split.positional.push_back(arg);
        } else if (arg == "--") {
            flags_ended = true;
        } else if (std::find(known_flags.begin(), known_flags.end(), arg) != known_flags.end()) {
            split.flags.push_back(arg);
        } else if (split.error.empty()) {
            split.error = "unknown option '" + arg + "'";
        }
    }
    return split;
}

}  // namespace tensorfs::cli
