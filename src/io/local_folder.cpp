#include "tensorfs/local_folder.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

#include "tensorfs/errors.hpp"

namespace tensorfs {
namespace fs = std::filesystem;

namespace {

const std::uint64_t kPage = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
// Smaller replies leave their pages mapped: dropping them would cost more than it saves.
constexpr std::size_t kForgetAtLeast = 64 << 10;

// A local file, opened once: the mount keeps serving the bytes it was mounted with when the file is later
// renamed over or deleted. Mapped read-only when it can be, so that replies come straight from the page cache.
class LocalFile : public SourceObject {
public:
    LocalFile(std::string name, int fd, const struct stat& status)
        : SourceObject(std::move(name), static_cast<std::uint64_t>(status.st_size), status.st_mtim), fd_(fd) {
        if (size() == 0) return;
        void* mapping = ::mmap(nullptr, static_cast<std::size_t>(size()), PROT_READ, MAP_SHARED, fd_, 0);
        // A file that cannot be mapped is still served, with pread (mapped() then says so).
        if (mapping != MAP_FAILED) mapping_ = static_cast<const char*>(mapping);
    }
    ~LocalFile() override {
        if (mapping_ != nullptr) ::munmap(const_cast<char*>(mapping_), static_cast<std::size_t>(size()));
        ::close(fd_);
    }

    void read(std::uint64_t offset, std::size_t length, void* dst) const override {
        auto* out = static_cast<char*>(dst);
        while (length > 0) {
            const ssize_t got = ::pread(fd_, out, length, static_cast<off_t>(offset));
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) throw IoError(name(), std::strerror(errno), kind_of_errno(errno));
            if (got == 0) throw IoError(name(), "file is shorter than when it was opened");
            out += got;
            offset += static_cast<std::uint64_t>(got);
            length -= static_cast<std::size_t>(got);
        }
    }

    // preadv2 with RWF_NOWAIT copies what the page cache holds and stops (EAGAIN, or a short count) where a page
    // would have to be read from the disk.
    bool read_if_cached(std::uint64_t offset, std::size_t length, void* dst) const override {
        auto* out = static_cast<char*>(dst);
        while (length > 0) {
            iovec into{out, length};
            const ssize_t got = ::preadv2(fd_, &into, 1, static_cast<off_t>(offset), RWF_NOWAIT);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) return false;  // EAGAIN: not cached; 0: the file shrank; or an error
            out += got;
            offset += static_cast<std::uint64_t>(got);
            length -= static_cast<std::size_t>(got);
        }
        return true;
    }

    const char* mapped(std::uint64_t offset, std::size_t length) const override {
        if (mapping_ == nullptr || offset > size() || length > size() - offset) return nullptr;
        struct stat st {};
        if (::fstat(fd_, &st) != 0) throw IoError(name(), std::strerror(errno), kind_of_errno(errno));
        if (static_cast<std::uint64_t>(st.st_size) < offset + length) {
            throw IoError(name(), "file is shorter than when it was opened");
        }
        return mapping_ + offset;
    }

    std::shared_ptr<char> map_copy_on_write() const override {
        if (size() == 0) return nullptr;
        const auto length = static_cast<std::size_t>(size());
        // No swap is reserved for pages nobody writes: a mapping of a model is mostly never written.
        void* mapping = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd_, 0);
        if (mapping == MAP_FAILED) return nullptr;
        return std::shared_ptr<char>(static_cast<char*>(mapping), [length](char* at) { ::munmap(at, length); });
    }

    void forget_mapped(std::uint64_t offset, std::size_t length) const override {
        if (mapping_ == nullptr || length < kForgetAtLeast) return;
        // Only whole pages inside the range: its edges may be shared with a neighbouring read in flight.
        const std::uint64_t first = (offset + kPage - 1) / kPage * kPage;
        const std::uint64_t end = (offset + length) / kPage * kPage;
        if (end > first) ::madvise(const_cast<char*>(mapping_) + first, end - first, MADV_DONTNEED);
    }

private:
    int fd_;
    const char* mapping_ = nullptr;  // nullptr when empty or not mappable
};

}  // namespace

std::string LocalFolder::name_of(const std::string& relative) const { return (path_ / relative).string(); }

std::shared_ptr<const SourceObject> LocalFolder::open_if_exists(const std::string& relative) const {
    const std::string name = name_of(relative);
    const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return nullptr;
    if (fd < 0) {
        const int error = errno;
        throw_source_error(kind_of_errno(error), name, std::string("cannot open: ") + std::strerror(error));
    }
    struct stat status {};
    if (::fstat(fd, &status) != 0) {
        const int error = errno;
        ::close(fd);
        throw_source_error(kind_of_errno(error), name, std::string("cannot stat: ") + std::strerror(error));
    }
    if (!S_ISREG(status.st_mode)) {
        ::close(fd);
        throw_problem(name, "not a regular file");
    }
    return std::make_shared<LocalFile>(name, fd, status);
}

std::vector<std::string> LocalFolder::list() const {
    std::vector<std::string> names;
    std::error_code error;
    const fs::path folder = path_.empty() ? fs::path(".") : path_;
    for (const auto& entry : fs::directory_iterator(folder, error)) {
        std::error_code entry_error;  // a dangling symlink is no regular file, not a reason to refuse the folder
        if (entry.is_regular_file(entry_error)) names.push_back(entry.path().filename().string());
    }
    if (error) {
        throw_source_error(kind_of_errno(error.value()), folder.string(), "cannot list folder: " + error.message());
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::vector<std::string> LocalFolder::list_all() const {
    std::vector<std::string> paths;
    std::error_code error;
    const fs::path folder = path_.empty() ? fs::path(".") : path_;
    // A subfolder that may not be read is left out, as `find` goes on past it; symlinked folders are not followed
    // (no loops), symlinked files are files (a Hub cache's snapshot). A clone's .git is git's, not the model's: the
    // Hub's listing of the same repo has none.
    fs::recursive_directory_iterator walk(folder, fs::directory_options::skip_permission_denied, error);
    for (; !error && walk != fs::recursive_directory_iterator(); walk.increment(error)) {
        std::error_code entry_error;
        if (walk->path().filename() == ".git" && walk->is_directory(entry_error)) {
            walk.disable_recursion_pending();
            continue;
        }
        if (walk->is_regular_file(entry_error)) {
            paths.push_back(walk->path().lexically_relative(folder).generic_string());
        }
    }
    if (error) {
        throw_source_error(kind_of_errno(error.value()), folder.string(), "cannot list folder: " + error.message());
    }
    std::sort(paths.begin(), paths.end());
    return paths;
}

unsigned LocalFolder::parallel_reads() const { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace tensorfs
