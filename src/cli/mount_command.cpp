// `tensorfs mount SOURCE MOUNTPOINT [-f] [-d] [-s] [-o OPT[,OPT…]] [--cache-size SIZE] [--threads N]
//                 [--cache-dir DIR] [--disk-cache-size SIZE] [--timeout SECONDS]`
#include <algorithm>

#include "arguments.hpp"
#include "commands.hpp"
#include "mount_options.hpp"
#include "mountpoint_checks.hpp"
#include "size_option.hpp"
#include "suggestions.hpp"
#include "tensorfs/mount.hpp"

namespace tensorfs::cli {

int mount_command(const Arguments& args) {
    MountOptions options;
    std::vector<std::string> positional;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        // The argument after an option that takes one, or nullptr at the end of the line.
        auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
        if (arg == "-f") {
            options.foreground = true;
        } else if (arg == "-d") {
            options.debug = true;
            options.foreground = true;
        } else if (arg == "-s") {
            options.single_threaded = true;
        } else if (arg == "-o" || (arg.starts_with("-o") && arg.size() > 2)) {
            // Both `-o LIST` and `-oLIST`.
            const std::string* list = arg == "-o" ? value() : &arg;
            if (list == nullptr) return usage_error("-o needs a list of options");
            const std::string error =
                take_option_list(std::string_view(*list).substr(arg == "-o" ? 0 : 2), options);
            if (!error.empty()) return usage_error(error);
        } else if (arg == "--cache-size") {
            const std::string* text = value();
            const auto size = text ? parse_size(*text) : std::nullopt;
            if (!size) return usage_error("--cache-size needs a size such as 512M or 2G");
            options.cache_size = *size;
        } else if (arg == "--threads") {
            const std::string* text = value();
            const auto threads = text ? parse_threads(*text) : std::nullopt;
            if (!threads) return usage_error("--threads needs a number from 1 to 1024");
            options.threads = *threads;
        } else if (arg == "--cache-dir" || arg == "--disk-cache-size" || arg == "--timeout") {
            const std::string* text = value();
            if (text == nullptr) return usage_error(arg + " needs a value");
            // The same as the -o option of the same name: --disk-cache-size is disk_cache_size=.
            std::string name = arg.substr(2);
            std::replace(name.begin(), name.end(), '-', '_');
            const std::string error = take_option_list(name + "=" + *text, options);
            if (!error.empty()) return usage_error(error);
        } else if (arg.starts_with("-") && arg.size() > 1) {
            return usage_error("unknown option '" + arg + "'" +
                               did_you_mean(arg, {"-f", "-d", "-s", "-o", "--cache-size", "--threads", "--cache-dir",
                                                  "--disk-cache-size", "--timeout"}));
        } else {
            positional.push_back(arg);
        }
    }
    if (const std::string problem = positional_problem("mount", positional, {"SOURCE", "MOUNTPOINT"});
        !problem.empty()) {
        return usage_error(problem);
    }
    options.source = positional[0];
    options.mountpoint = positional[1];
    if (const int refused = check_mountpoint(options.mountpoint); refused != 0) return refused;
    return run_mount(options);
}

int umount_command(const Arguments& args) {
    const SplitArguments split = split_arguments(args, {});
    if (!split.error.empty()) return usage_error(split.error);
    if (const std::string problem = positional_problem("umount", split.positional, {"MOUNTPOINT"});
        !problem.empty()) {
        return usage_error(problem);
    }
    if (const int refused = check_unmountable(split.positional[0]); refused != 0) return refused;
    return run_umount(split.positional[0]);
}

}  // namespace tensorfs::cli
