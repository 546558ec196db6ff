#include "mountpoint_checks.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "mount_table.hpp"

namespace tensorfs::cli {
namespace {

int mount_failure(const std::string& message) {
    std::fprintf(stderr, "tensorfs: %s\n", message.c_str());
    return 2;
}

bool folder_is_empty(const std::string& folder) {
    DIR* listing = ::opendir(folder.c_str());
    if (listing == nullptr) return true;  // unreadable: the mount will say what is wrong
    bool empty = true;
    while (const dirent* entry = ::readdir(listing)) {
        if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
            empty = false;
            break;
        }
    }
    ::closedir(listing);
    return empty;
}

}  // namespace

int check_mountpoint(const std::string& mountpoint) {
    // Before any stat: the mount there may be one whose daemon died.
    if (const auto mounted = mount_at(mountpoint); mounted && mounted->type == "fuse.tensorfs") {
        return mount_failure(mountpoint + ": already a tensorfs mount (of " + mounted->source +
                             "); unmount it first: tensorfs umount " + mountpoint);
    }
    struct stat status {};
    if (::stat(mountpoint.c_str(), &status) != 0) {
        if (errno == ENOENT) {
            return mount_failure(mountpoint + ": no such folder; create it first: mkdir -p " + mountpoint);
        }
        return mount_failure(mountpoint + ": " + std::strerror(errno));
    }
    if (!S_ISDIR(status.st_mode)) return mount_failure(mountpoint + ": not a directory");
    // Resolved (it exists, and is no dead mount): a symbolic link into a mount is inside it too.
    if (char* resolved = ::realpath(mountpoint.c_str(), nullptr)) {
        const std::string path(resolved);
        std::free(resolved);
        if (const auto outer = tensorfs_mount_holding(path)) {
            return mount_failure(mountpoint + ": inside the tensorfs mount " + outer->mountpoint +
                                 " (a read-only tree of " + outer->source + "); mount somewhere else");
        }
    }
    if (!folder_is_empty(mountpoint)) {
        std::fprintf(stderr, "tensorfs: warning: %s is not empty; its files are hidden while the mount is there\n",
                     mountpoint.c_str());
    }
    return 0;
}

int check_unmountable(const std::string& mountpoint) {
    const auto mounted = mount_at(mountpoint);
    if (!mounted) {
        struct stat status {};
        if (::stat(mountpoint.c_str(), &status) != 0 && errno == ENOENT) {
            return mount_failure(mountpoint + ": no such folder");
        }
        return mount_failure(mountpoint + ": not mounted");
    }
    if (mounted->type != "fuse.tensorfs") {
        return mount_failure(mountpoint + ": not a tensorfs mount (" + mounted->type + "); use umount(8)");
    }
    // The kernel says only "busy" while a mount inside it is there.
    const auto inside = mounts_inside(mounted->mountpoint);
    if (!inside.empty()) {
        std::string names;
        for (const auto& entry : inside) names += (names.empty() ? "" : ", ") + entry.mountpoint;
        return mount_failure(mountpoint + ": busy: " + names + (inside.size() == 1 ? " is a mount" : " are mounts") +
                             " inside it; unmount " + (inside.size() == 1 ? "it" : "them") + " first");
    }
    return 0;
}

}  // namespace tensorfs::cli
