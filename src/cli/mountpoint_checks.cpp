#include "mountpoint_checks.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
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
    if (!folder_is_empty(mountpoint)) {
        std::fprintf(stderr, "tensorfs: warning: %s is not empty; its files are hidden while the mount is there\n",
                     mountpoint.c_str());
    }
    return 0;
}

int check_unmountable(const std::string& mountpoint) {
    const auto mounted = mount_at(mountpoint);
    if (!mounted) return mount_failure(mountpoint + ": not mounted");
    if (mounted->type != "fuse.tensorfs") {
        return mount_failure(mountpoint + ": not a tensorfs mount (" + mounted->type + "); use umount(8)");
    }
    return 0;
}

}  // namespace tensorfs::cli
