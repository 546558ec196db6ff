#include "mountinfo.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tensorfs::csi {
namespace {

// mountinfo writes space, tab, newline and backslash in paths as \040, \011, \012, \134.
std::string unescaped(const std::string& field) {
    std::string text;
    for (std::size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size()) {
            const std::string digits = field.substr(i + 1, 3);
            if (digits.find_first_not_of("01234567") == std::string::npos) {
                text += static_cast<char>(std::stoi(digits, nullptr, 8));
                i += 3;
                continue;
            }
        }
        text += field[i];
    }
    return text;
}

}  // namespace

std::vector<MountEntry> mounts_at(const std::string& path) {
    std::vector<MountEntry> found;
    std::ifstream table("/proc/self/mountinfo");
    for (std::string line; std::getline(table, line);) {
        // ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
        std::istringstream fields(line);
        std::string id, parent, device, root, mountpoint;
        fields >> id >> parent >> device >> root >> mountpoint;
        if (unescaped(mountpoint) != path) continue;
        std::string word;
        while (fields >> word && word != "-") {
        }
        MountEntry entry;
        entry.mountpoint = path;
        if (const std::size_t colon = device.find(':'); colon != std::string::npos) {
            entry.minor = static_cast<unsigned>(std::strtoul(device.c_str() + colon + 1, nullptr, 10));
        }
        fields >> entry.fstype >> entry.source;
        entry.source = unescaped(entry.source);
        found.push_back(std::move(entry));
    }
    return found;
}

std::string resolved_target(const std::string& path) {
    std::filesystem::path target = std::filesystem::path(path).lexically_normal();
    if (!target.has_filename()) target = target.parent_path();  // "/a/b/" is "/a/b"
    const std::string parent = target.parent_path().string();
    char* resolved = ::realpath(parent.c_str(), nullptr);
    if (resolved == nullptr) return target.string();
    std::filesystem::path whole = std::filesystem::path(resolved) / target.filename();
    std::free(resolved);
    return whole.string();
}

}  // namespace tensorfs::csi
