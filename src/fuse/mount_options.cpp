#include "mount_options.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "libfuse.hpp"
#include "tensorfs/settings.hpp"

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

// libfuse's and mount(8)'s usual options (libfuse itself says which it takes), for suggestions only.
constexpr std::array<std::string_view, 19> kOtherOptionNames = {
    "allow_other", "allow_root", "auto_unmount", "default_permissions", "fsname", "subtype", "max_read",
    "dev",         "nodev",      "suid",         "nosuid",              "exec",   "noexec",  "atime",
    "noatime",     "sync",       "async",        "dirsync",             "debug",
};

// "unknown mount option 'OPT'", suggesting the nearest of every option's name when OPT's looks like a typo of one.
std::string unknown_mount_option(std::string_view option) {
    std::vector<std::string_view> others(kOtherOptionNames.begin(), kOtherOptionNames.end());
    others.insert(others.end(), kIgnoredOptions.begin(), kIgnoredOptions.end());
    return unknown_option(option, others, "mount option");
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
        const std::size_t equals = option.find('=');
        const std::string_view name = option.substr(0, equals);
        if (option_named(name) == nullptr) {
            if (!libfuse_accepts(std::string(option))) return unknown_mount_option(option);
            options.fuse_options.emplace_back(option);
            continue;
        }
        if (equals == std::string_view::npos) {
            return std::string(option) + " needs a value: " + std::string(option) + "=...";
        }
        const TakenSetting taken = take_setting(name, option.substr(equals + 1), options.settings);
        if (taken.outcome == SettingOutcome::Refused) return taken.message;
    }
    return {};
}

}  // namespace tensorfs
