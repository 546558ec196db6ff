#include "tensorfs/source_files.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tensorfs/errors.hpp"

namespace tensorfs {
namespace {

const std::uint64_t kPage = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
// Smaller replies leave their pages mapped: dropping them would cost more than it saves.
constexpr std::size_t kForgetAtLeast = 64 << 10;

}  // namespace

SourceFiles::SourceFiles(const Catalog& catalog) {
    Problems problems;
    for (const auto& file : catalog.files) {
        OpenFile open_file;
        open_file.path = file.path;
        open_file.fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st {};
        if (open_file.fd < 0 || ::fstat(open_file.fd, &st) != 0) {
            problems.add(file.path, std::string("cannot open: ") + std::strerror(errno));
        } else if (st.st_size > 0) {
            void* mapping = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_SHARED, open_file.fd, 0);
            // A file that cannot be mapped is still served, with pread (mapped() then says so).
            if (mapping != MAP_FAILED) {
                open_file.mapping = static_cast<const char*>(mapping);
                open_file.mapped_size = static_cast<std::uint64_t>(st.st_size);
            }
        }
        files_.push_back(std::move(open_file));
    }
    if (!problems.empty()) {
        close_all();
        problems.throw_if_any();
    }
}

SourceFiles::~SourceFiles() { close_all(); }

void SourceFiles::close_all() {
    for (OpenFile& file : files_) {
        if (file.mapping != nullptr) ::munmap(const_cast<char*>(file.mapping), file.mapped_size);
        if (file.fd >= 0) ::close(file.fd);
    }
    files_.clear();
}

void SourceFiles::read_exact(std::uint32_t file, std::uint64_t offset, std::size_t length, void* dst) const {
    auto* out = static_cast<char*>(dst);
    while (length > 0) {
        const ssize_t got = ::pread(files_[file].fd, out, length, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw IoError(files_[file].path + ": " + std::strerror(errno));
        if (got == 0) throw IoError(files_[file].path + ": file is shorter than when it was mounted");
        out += got;
        offset += static_cast<std::uint64_t>(got);
        length -= static_cast<std::size_t>(got);
    }
}

const char* SourceFiles::mapped(std::uint32_t index, std::uint64_t offset, std::size_t length) const {
    const OpenFile& file = files_[index];
    if (file.mapping == nullptr || offset > file.mapped_size || length > file.mapped_size - offset) return nullptr;
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) throw IoError(file.path + ": " + std::strerror(errno));
    if (static_cast<std::uint64_t>(st.st_size) < offset + length) {
        throw IoError(file.path + ": file is shorter than when it was mounted");
    }
    return file.mapping + offset;
}

void SourceFiles::forget_mapped(std::uint32_t index, std::uint64_t offset, std::size_t length) const {
    const OpenFile& file = files_[index];
    if (file.mapping == nullptr || length < kForgetAtLeast) return;
    // Only whole pages inside the range: its edges may be shared with a neighbouring read in flight.
    const std::uint64_t first = (offset + kPage - 1) / kPage * kPage;
    const std::uint64_t end = (offset + length) / kPage * kPage;
    if (end > first) ::madvise(const_cast<char*>(file.mapping) + first, end - first, MADV_DONTNEED);
}

}  // namespace tensorfs
