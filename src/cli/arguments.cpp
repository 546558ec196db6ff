#include "arguments.hpp"

#include <algorithm>
#include <utility>

#include "fuse/mount_options.hpp"
#include "remote/disk_cache_budget.hpp"
#include "tensorfs/size_option.hpp"
#include "tensorfs/suggestions.hpp"

namespace tensorfs::cli {

bool SplitArguments::has(std::string_view flag) const {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

SplitArguments split_arguments(const Arguments& args, std::initializer_list<std::string_view> known_flags,
                               const std::vector<std::string_view>& flags_with_values) {
    SplitArguments split;
    bool flags_ended = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (flags_ended || arg == "-" || !arg.starts_with("-")) {
            split.positional.push_back(arg);
        } else if (arg == "--") {
            flags_ended = true;
        } else if (std::find(known_flags.begin(), known_flags.end(), arg) != known_flags.end()) {
            split.flags.push_back(arg);
        } else if (std::find(flags_with_values.begin(), flags_with_values.end(), arg) != flags_with_values.end()) {
            if (i + 1 == args.size()) {
                if (split.error.empty()) split.error = arg + " needs a value";
            } else {
                split.values[arg] = args[++i];
            }
        } else if (split.error.empty()) {
            std::vector<std::string_view> known(known_flags);
            known.insert(known.end(), flags_with_values.begin(), flags_with_values.end());
            split.error = "unknown option '" + arg + "'" + did_you_mean(arg, known);
        }
    }
    return split;
}

std::string positional_problem(std::string_view command, const std::vector<std::string>& positional,
                               std::initializer_list<std::string_view> names) {
    if (positional.size() > names.size()) {
        return std::string(command) + ": unexpected argument '" + positional[names.size()] + "'";
    }
    if (positional.size() == names.size()) return {};
    std::string needed;
    for (const std::string_view name : names) needed += (needed.empty() ? "" : " and ") + std::string(name);
    return std::string(command) + " needs " + needed;
}

std::string take_source_flags(const SplitArguments& split, Settings& settings) {
    if (const auto list = split.values.find("-o"); list != split.values.end()) {
        MountOptions parsed;
        parsed.settings = settings;
        if (std::string error = take_option_list(list->second, parsed); !error.empty()) return error;
        settings = std::move(parsed.settings);
    }
    // Each flag is the option of the same name (--cache-dir: cache_dir), checked alike; named as given in messages.
    for (const char* flag : {"--model", "--cache-dir", "--disk-cache-size", "--timeout"}) {
        const auto value = split.values.find(flag);
        if (value == split.values.end()) continue;
        std::string name = std::string(flag).substr(2);
        std::replace(name.begin(), name.end(), '-', '_');
        const TakenSetting taken = take_setting(name, value->second, settings, flag);
        if (taken.outcome != SettingOutcome::Taken) return taken.message;
    }
    return {};
}

}  // namespace tensorfs::cli
