#include "tensorfs/source_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tensorfs/errors.hpp"

namespace tensorfs {

SourceFiles::SourceFiles(const Catalog& catalog) {
    Problems problems;
    for (const auto& file : catalog.files) {
        const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) problems.add(file.path, std::string("cannot open: ") + std::strerror(errno));
        fds_.push_back(fd);
        paths_.push_back(file.path);
    }
    if (!problems.empty()) {
        for (const int fd : fds_) {
            if (fd >= 0) ::close(fd);
        }
        problems.throw_if_any();
    }
}

SourceFiles::~SourceFiles() {
    for (const int fd : fds_) ::close(fd);
}

void SourceFiles::read_exact(std::uint32_t file, std::uint64_t offset, std::size_t length, void* dst) const {
    auto* out = static_cast<char*>(dst);
    while (length > 0) {
        const ssize_t got = ::pread(fds_[file], out, length, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw IoError(paths_[file] + ": " + std::strerror(errno));
        if (got == 0) throw IoError(paths_[file] + ": file is shorter than when it was mounted");
        out += got;
        offset += static_cast<std::uint64_t>(got);
        length -= static_cast<std::size_t>(got);
    }
}

}  // namespace tensorfs
