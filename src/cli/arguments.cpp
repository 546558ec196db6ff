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

std::string take_source_flags(const SplitArguments& split, SourceOptions& options) {
    if (const auto list = split.values.find("-o"); list != split.values.end()) {
        MountOptions parsed;
        parsed.source_options = options;
        if (std::string error = take_option_list(list->second, parsed); !error.empty()) return error;
        options = std::move(parsed.source_options);
    }
    if (const auto dir = split.values.find("--cache-dir"); dir != split.values.end()) {
        if (dir->second.empty()) return "--cache-dir needs a folder";
        options.cache_dir = dir->second;
    }
    if (const auto size = split.values.find("--disk-cache-size"); size != split.values.end()) {
        const auto bytes = parse_size(size->second);
        if (!bytes) return "bad --disk-cache-size '" + size->second + "' (e.g. 10G; 0 for none)";
        if (std::string problem = remote::disk_cache_size_problem("--disk-cache-size", size->second, *bytes);
            !problem.empty()) {
            return problem;
        }
        options.disk_cache_size = *bytes;
    }
    if (const auto seconds = split.values.find("--timeout"); seconds != split.values.end()) {
        const auto timeout = parse_timeout(seconds->second);
        if (!timeout) return "bad --timeout '" + seconds->second + "' (seconds, e.g. 20 or 2.5)";
        options.timeout = *timeout;
    }
    return {};
}

std::string take_model_flag(const SplitArguments& split, std::string& model) {
    if (const auto list = split.values.find("-o"); list != split.values.end()) {
        MountOptions parsed;
        if (std::string error = take_option_list(list->second, parsed); !error.empty()) return error;
        if (!parsed.model.empty()) model = parsed.model;
    }
    const auto path = split.values.find("--model");
    if (path == split.values.end()) return {};
    if (path->second.empty()) return "--model needs a path in the folder (e.g. --model model-Q4_K_M.gguf)";
    model = path->second;
    return {};
}

}  // namespace tensorfs::cli
