#include "mount_table.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tensorfs::cli {
namespace {

// mountinfo writes space, tab, newline and backslash in paths as \NNN (octal).
std::string unescaped(const std::string& field) {
    std::string text;
    for (std::size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' && field[i + 1] <= '3') {
            text += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0'));
            i += 3;
        } else {
            text += field[i];
        }
    }
    return text;
}

}  // namespace

std::vector<MountEntry> all_mounts() {
    std::vector<MountEntry> mounts;
    std::ifstream file("/proc/self/mountinfo");
    for (std::string line; std::getline(file, line);) {
        // ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS
        std::istringstream fields(line);
        std::string id, parent, device, root, mountpoint, field;
        if (!(fields >> id >> parent >> device >> root >> mountpoint)) continue;
        while (fields >> field && field != "-") {
        }
        MountEntry entry;
        if (!(fields >> entry.type >> entry.source)) continue;
        entry.mountpoint = unescaped(mountpoint);
        entry.source = unescaped(entry.source);
        mounts.push_back(std::move(entry));
    }
    return mounts;
}

std::vector<MountEntry> tensorfs_mounts() {
    std::vector<MountEntry> mounts;
    for (auto& entry : all_mounts()) {
        if (entry.type == "fuse.tensorfs") mounts.push_back(std::move(entry));
    }
    return mounts;
}

std::string absolute_path_of(const std::string& path) {
    namespace fs = std::filesystem;
    fs::path normal = fs::absolute(path).lexically_normal();
    if (normal.has_parent_path() && normal.filename().empty()) normal = normal.parent_path();  // "dir/" -> "dir"
    if (normal == normal.root_path()) return normal.string();
    // The parent resolved (symbolic links, ..), the last name kept: resolving the path itself would stat a mount.
    if (char* parent = ::realpath(normal.parent_path().c_str(), nullptr)) {
        normal = fs::path(parent) / normal.filename();
        std::free(parent);
    }
    return normal.string();
}

std::optional<MountEntry> mount_at(const std::string& path) {
    const std::string wanted = absolute_path_of(path);
    std::optional<MountEntry> found;
    for (auto& entry : all_mounts()) {
        if (entry.mountpoint == wanted) found = std::move(entry);  // the last one listed is on top
    }
    return found;
}

namespace {

bool is_inside(const std::string& path, const std::string& folder) {
    if (folder == "/") return path.size() > 1 && path.starts_with('/');
    return path.size() > folder.size() && path.starts_with(folder) && path[folder.size()] == '/';
}

}  // namespace

std::optional<MountEntry> tensorfs_mount_holding(const std::string& path) {
    std::optional<MountEntry> found;
    for (auto& entry : tensorfs_mounts()) {
        if (entry.mountpoint != path && !is_inside(path, entry.mountpoint)) continue;
        if (!found || entry.mountpoint.size() >= found->mountpoint.size()) found = std::move(entry);
    }
    return found;
}

std::vector<MountEntry> mounts_inside(const std::string& mountpoint) {
    std::vector<MountEntry> inside;
    for (auto& entry : all_mounts()) {
        if (is_inside(entry.mountpoint, mountpoint)) inside.push_back(std::move(entry));
    }
    return inside;
}

std::string dead_mount_clearing(const std::string& mountpoint) { return "fusermount3 -u " + mountpoint; }

std::string dead_mount_line(const std::string& mountpoint) {
    return mountpoint + ": its daemon is gone; clear the mount with: " + dead_mount_clearing(mountpoint);
}

}  // namespace tensorfs::cli
