// `tensorfs mount SOURCE MOUNTPOINT [-f] [-d] [-s] [-o OPT[,OPT…]] [--cache-size SIZE] [--threads N]
//                 [--model PATH] [--cache-dir DIR] [--disk-cache-size SIZE] [--timeout SECONDS] [--secrets-fd N]`
#include <algorithm>
#include <charconv>
#include <optional>

#include "arguments.hpp"
#include "commands.hpp"
#include "fuse/mount_options.hpp"
#include "mountpoint_checks.hpp"
#include "secrets_input.hpp"
#include "tensorfs/size_option.hpp"
#include "tensorfs/suggestions.hpp"
#include "tensorfs/mount.hpp"

namespace tensorfs::cli {
namespace {

std::optional<int> parse_descriptor(const std::string& text) {
    int fd = -1;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), fd);
    if (error != std::errc() || end != text.data() + text.size() || fd < 0) return std::nullopt;
    return fd;
}

}  // namespace

int mount_command(const Arguments& args) {
    MountOptions options;
    std::vector<std::string> positional;
    std::optional<int> secrets_fd;
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
        } else if (arg == "--threads" || arg == "--cache-size" || arg == "--cache-dir" || arg == "--disk-cache-size" ||
                   arg == "--model" || arg == "--timeout") {
            const std::string* text = value();
            if (text == nullptr) return usage_error(arg + " needs a value");
            // The option of the same name (cache_size...), so that both are checked alike.
            std::string name = arg.substr(2);
            std::replace(name.begin(), name.end(), '-', '_');
            const TakenSetting taken = take_setting(name, *text, options.settings, arg);
            if (taken.outcome != SettingOutcome::Taken) return usage_error(taken.message);
        } else if (arg == "--secrets-fd") {
            const std::string* text = value();
            const auto fd = text ? parse_descriptor(*text) : std::nullopt;
            if (!fd) return usage_error("--secrets-fd needs a file descriptor number");
            secrets_fd = *fd;
        } else if (arg.starts_with("-") && arg.size() > 1) {
            return usage_error("unknown option '" + arg + "'" +
                               did_you_mean(arg, {"-f", "-d", "-s", "-o", "--cache-size", "--threads", "--cache-dir",
                                                  "--disk-cache-size", "--model", "--timeout", "--secrets-fd"}));
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
    if (secrets_fd) {
        if (const std::string error = take_secrets(*secrets_fd, options); !error.empty()) return usage_error(error);
    }
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
