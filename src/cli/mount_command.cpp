// `tensorfs mount SOURCE MOUNTPOINT [-f] [-d] [-s] [-o OPT[,OPT…]] [--cache-size SIZE] [--threads N]`
#include <charconv>

#include "commands.hpp"
#include "size_option.hpp"
#include "tensorfs/mount.hpp"

namespace tensorfs::cli {
namespace {

std::optional<unsigned> parse_threads(std::string_view text) {
    unsigned threads = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), threads);
    if (error != std::errc() || end != text.data() + text.size() || threads == 0 || threads > 1024) return std::nullopt;
    return threads;
}

// Splits `-o a,b=c` and takes out the options that are tensorfs's own; the rest go to libfuse.
// Returns an error message, or an empty string.
std::string take_option_list(std::string_view list, MountOptions& options) {
    std::size_t start = 0;
    while (start <= list.size()) {
        std::size_t comma = list.find(',', start);
        if (comma == std::string_view::npos) comma = list.size();
        const std::string_view option = list.substr(start, comma - start);
        start = comma + 1;
        if (option.empty()) continue;
        if (option.starts_with("cache_size=")) {
            const auto size = parse_size(option.substr(11));
            if (!size) return "bad cache_size '" + std::string(option.substr(11)) + "' (e.g. 512M, 2G)";
            options.cache_size = *size;
        } else if (option.starts_with("threads=")) {
            const auto threads = parse_threads(option.substr(8));
            if (!threads) return "bad threads '" + std::string(option.substr(8)) + "' (1 to 1024)";
            options.threads = *threads;
        } else if (option == "ro") {
            // Always read-only; mount(8) and fstab pass it along.
        } else if (option == "rw") {
            return "tensorfs mounts are read-only; remove the 'rw' option";
        } else {
            options.fuse_options.emplace_back(option);
        }
    }
    return {};
}

}  // namespace

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
        } else if (arg.starts_with("-") && arg.size() > 1) {
            return usage_error("unknown option '" + arg + "'");
        } else {
            positional.push_back(arg);
        }
    }
    if (positional.size() != 2) return usage_error("mount needs SOURCE and MOUNTPOINT");
    options.source = positional[0];
    options.mountpoint = positional[1];
    return run_mount(options);
}

int umount_command(const Arguments& args) {
    if (args.size() != 1) return usage_error("umount needs MOUNTPOINT");
    return run_umount(args[0]);
}

}  // namespace tensorfs::cli
