#include "mount_options.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

#include "libfuse.hpp"
#include "remote/disk_cache_budget.hpp"
#include "remote/secrets.hpp"
#include "tensorfs/dequant_reader.hpp"
#include "tensorfs/size_option.hpp"
#include "tensorfs/suggestions.hpp"

namespace tensorfs {
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

// tensorfs's own options, by name (NAME=VALUE). take_option_list takes no other option as its own: one parsed
// below but missing here is refused as unknown, so that this list stays whole, and a mistyped name is matched
// against it.
constexpr std::array<std::string_view, 15> kOwnOptions = {
    "cache_size",      "threads",   "export_dtype", "model",   "cache_dir",      "disk_cache_size",
    "max_connections", "readahead", "proxy",        "header",  "timeout",        "log_fd",
    "log_id",          "csi_volume", "secrets_socket",
};

// libfuse's and mount(8)'s usual options (libfuse itself says which it takes), for suggestions only.
constexpr std::array<std::string_view, 19> kOtherOptionNames = {
    "allow_other", "allow_root", "auto_unmount", "default_permissions", "fsname", "subtype", "max_read",
    "dev",         "nodev",      "suid",         "nosuid",              "exec",   "noexec",  "atime",
    "noatime",     "sync",       "async",        "dirsync",             "debug",
};

bool is_own(std::string_view name) {
    return std::find(kOwnOptions.begin(), kOwnOptions.end(), name) != kOwnOptions.end();
}

// "unknown mount option 'OPT'", with OPT's value after the nearest known name when OPT's name looks like a typo
// of one ("did you mean 'cache_size=1G'?").
std::string unknown_option(std::string_view option) {
    const std::string_view name = option.substr(0, option.find('='));
    std::vector<std::string_view> names(kOwnOptions.begin(), kOwnOptions.end());
    names.insert(names.end(), kOtherOptionNames.begin(), kOtherOptionNames.end());
    names.insert(names.end(), kIgnoredOptions.begin(), kIgnoredOptions.end());
    const std::string found = nearest(name, names);
    std::string message = "unknown mount option '" + std::string(option) + "'";
    if (found.empty() || found == name) return message;
    return message + "; did you mean '" + found + std::string(option.substr(name.size())) + "'?";
}

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
        if (option == "debug") {
            // As -d: libfuse's lines about every request go to stderr, which a daemon in the background has not.
            options.debug = true;
            options.foreground = true;
            continue;
        }
        if (!is_own(option.substr(0, option.find('=')))) {
            if (!libfuse_accepts(std::string(option))) return unknown_option(option);
            options.fuse_options.emplace_back(option);
        } else if (option.find('=') == std::string_view::npos) {
            return std::string(option) + " needs a value: " + std::string(option) + "=...";
        } else if (option.starts_with("cache_size=")) {
            const auto size = parse_size(option.substr(11));
            if (!size) return "bad cache_size '" + std::string(option.substr(11)) + "' (e.g. 512M, 2G)";
            const std::uint64_t smallest_chunk = chunk_bytes_for_budget(0);
            if (std::string problem = budget_problem("cache_size", option.substr(11), *size, smallest_chunk,
                                                     "one chunk of decoded values");
                !problem.empty()) {
                return problem;
            }
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
            if (std::string problem = remote::disk_cache_size_problem("disk_cache_size", option.substr(16), *size);
                !problem.empty()) {
                return problem;
            }
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
            options.readahead_given = true;
        } else if (option.starts_with("proxy=")) {
            if (std::string error = take_proxy(option.substr(6), options.source_options); !error.empty()) return error;
        } else if (option.starts_with("header=")) {
            if (std::string error = take_header(option.substr(7), options.source_options); !error.empty()) return error;
        } else if (option.starts_with("timeout=")) {
            const auto timeout = parse_timeout(option.substr(8));
            if (!timeout) return "bad timeout '" + std::string(option.substr(8)) + "' (seconds, e.g. 20 or 2.5)";
            options.source_options.timeout = *timeout;
        } else if (option.starts_with("log_fd=")) {
            int fd = -1;
            const std::string_view text = option.substr(7);
            const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), fd);
            if (error != std::errc() || end != text.data() + text.size() || fd < 3) {
                return "bad log_fd '" + std::string(text) + "' (an open file descriptor, 3 or more)";
            }
            options.log_fd = fd;
        } else if (option.starts_with("log_id=")) {
            options.log_id = std::string(option.substr(7));
        } else if (option.starts_with("secrets_socket=")) {
            const std::string_view path = option.substr(15);
            if (!path.starts_with("/")) return "secrets_socket= needs an absolute path (a unix socket to make)";
            options.secrets_socket = std::string(path);
        } else if (option.starts_with("csi_volume=")) {
            if (option.size() == 11) return "csi_volume= needs a volume id";
            options.csi_volume = std::string(option.substr(11));
            // From here on, even for the options after it: what to do is said in Kubernetes terms.
            remote::set_kubernetes_volume(options.csi_volume);
        } else {
            return "unknown mount option '" + std::string(option) + "'";  // listed in kOwnOptions, parsed nowhere
        }
    }
    return {};
}

}  // namespace tensorfs
