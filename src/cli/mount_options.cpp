#include "mount_options.hpp"

#include <array>
#include <charconv>

#include "libfuse.hpp"
#include "size_option.hpp"

namespace tensorfs::cli {
namespace {

// Options a mount(8) line may carry that change nothing here. `rw` is among them: mount(8) adds it to every
// line without `ro`, so refusing it would break plain fstab lines; the mount stays read-only all the same.
// The atime variants libfuse 3.14 does not know mean nothing either: no time in the tree ever changes.
constexpr std::array<std::string_view, 19> kIgnoredOptions = {
    "ro",       "rw",         "defaults",    "auto",          "noauto",   "user",    "users",
    "nouser",   "owner",      "group",       "nofail",        "_netdev",  "relatime", "norelatime",
    "strictatime", "nostrictatime", "nodiratime", "lazytime", "nolazytime",
};

// Prefixes of options that are comments or settings for other programs (systemd, mount(8) itself).
constexpr std::array<std::string_view, 3> kIgnoredPrefixes = {"x-", "X-", "comment="};

bool is_ignored(std::string_view option) {
    for (const auto ignored : kIgnoredOptions) {
        if (option == ignored) return true;
    }
    for (const auto prefix : kIgnoredPrefixes) {
        if (option.starts_with(prefix)) return true;
    }
    return false;
}

}  // namespace

std::optional<unsigned> parse_threads(std::string_view text) {
    unsigned threads = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), threads);
    if (error != std::errc() || end != text.data() + text.size() || threads == 0 || threads > 1024) return std::nullopt;
    return threads;
}

std::string take_option_list(std::string_view list, MountOptions& options) {
    std::size_t start = 0;
    while (start <= list.size()) {
        std::size_t comma = list.find(',', start);
        if (comma == std::string_view::npos) comma = list.size();
        const std::string_view option = list.substr(start, comma - start);
        start = comma + 1;
        if (option.empty() || is_ignored(option)) continue;
        if (option.starts_with("cache_size=")) {
            const auto size = parse_size(option.substr(11));
            if (!size) return "bad cache_size '" + std::string(option.substr(11)) + "' (e.g. 512M, 2G)";
            options.cache_size = *size;
        } else if (option.starts_with("export_dtype=")) {
            const auto dtype = export_dtype_named(option.substr(13));
            if (!dtype) return "bad export_dtype '" + std::string(option.substr(13)) + "' (keep, bf16, f16 or f32)";
            options.export_dtype = *dtype;
        } else if (option.starts_with("threads=")) {
            const auto threads = parse_threads(option.substr(8));
            if (!threads) return "bad threads '" + std::string(option.substr(8)) + "' (1 to 1024)";
            options.threads = *threads;
        } else if (option.starts_with("model=")) {
            if (option.size() == 6) return "model= needs a path in the folder (e.g. model=model-Q4_K_M.gguf)";
            options.model = std::string(option.substr(6));
        } else if (option.starts_with("cache_dir=")) {
            if (option.size() == 10) return "cache_dir= needs a folder";
            options.source_options.cache_dir = std::string(option.substr(10));
        } else if (option.starts_with("disk_cache_size=")) {
            const auto size = parse_size(option.substr(16));
            if (!size) return "bad disk_cache_size '" + std::string(option.substr(16)) + "' (e.g. 10G; 0 for none)";
            options.source_options.disk_cache_size = *size;
        } else if (option.starts_with("max_connections=")) {
            const auto connections = parse_threads(option.substr(16));
            if (!connections || *connections > kMostConnections) {
                return "bad max_connections '" + std::string(option.substr(16)) + "' (1 to " +
                       std::to_string(kMostConnections) + ")";
            }
            options.source_options.max_connections = *connections;
        } else if (option.starts_with("readahead=")) {
            const auto size = parse_size(option.substr(10));
            if (!size) return "bad readahead '" + std::string(option.substr(10)) + "' (e.g. 64M; 0 for none)";
            options.source_options.readahead = *size;
        } else if (option.starts_with("timeout=")) {
            const auto timeout = parse_timeout(option.substr(8));
            if (!timeout) return "bad timeout '" + std::string(option.substr(8)) + "' (seconds, e.g. 20 or 2.5)";
            options.source_options.timeout = *timeout;
        } else if (libfuse_accepts(std::string(option))) {
            options.fuse_options.emplace_back(option);
        } else {
            return "unknown mount option '" + std::string(option) + "'";
        }
    }
    return {};
}

}  // namespace tensorfs::cli
