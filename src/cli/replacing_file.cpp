#include "replacing_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace tensorfs::cli {
namespace {

std::string folder_of(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

mode_t current_umask() {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return mask;
}

}  // namespace

ReplacingFile::ReplacingFile(std::string target) : target_(std::move(target)) {
    struct stat existing {};
    if (::stat(target_.c_str(), &existing) == 0 && S_ISDIR(existing.st_mode)) {
        throw std::runtime_error(target_ + ": is a folder; name the file to write");
    }
    // Hidden, next to the target (so that the rename stays on one filesystem), and named after it.
    temporary_ = folder_of(target_) + "/." + name_of(target_) + ".tensorfs-XXXXXX";
    std::vector<char> name(temporary_.begin(), temporary_.end());
    name.push_back('\0');
    fd_ = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd_ < 0) {
        const int error = errno;
        temporary_.clear();
        throw std::runtime_error(target_ + ": cannot create a file in " + folder_of(target_) + ": " +
                                 std::strerror(error));
    }
    temporary_.assign(name.data());
    ::fchmod(fd_, 0666 & ~current_umask());
}

ReplacingFile::~ReplacingFile() {
    if (!committed_) discard();
}

void ReplacingFile::fail(const std::string& what) {
    const int error = errno;
    discard();
    throw std::runtime_error(target_ + ": " + what + ": " + std::strerror(error));
}

bool ReplacingFile::write(const char* data, std::size_t length, bool (*interrupted)()) {
    while (length > 0) {
        const ssize_t written = ::write(fd_, data, length);
        if (written < 0 && errno == EINTR) {
            if (interrupted()) return false;
            continue;
        }
        if (written < 0) fail("cannot write");
        data += written;
        length -= static_cast<std::size_t>(written);
    }
    return true;
}

void ReplacingFile::commit() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("cannot write");
    if (::rename(temporary_.c_str(), target_.c_str()) != 0) fail("cannot rename " + temporary_ + " to it");
    committed_ = true;
}

void ReplacingFile::discard() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temporary_.empty()) ::unlink(temporary_.c_str());
    temporary_.clear();
}

}  // namespace tensorfs::cli
