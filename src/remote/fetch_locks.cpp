#include "fetch_locks.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <string>
#include <system_error>
#include <thread>

namespace tensorfs::remote {
namespace fs = std::filesystem;

namespace {

constexpr const char* kLockFile = ".fetching";
// A block's byte: 39 bits of its object's folder name, then 23 of its index (8 TiB of 1 MiB blocks; past that,
// blocks share bytes). 62 bits in all: an offset must be positive, and the byte after them is the waiters'.
constexpr unsigned kIndexBits = 23;
constexpr unsigned kObjectBits = 39;
constexpr unsigned kObjectHexDigits = 10;
constexpr std::uint64_t kWaitersByte = std::uint64_t{1} << (kIndexBits + kObjectBits);
// A waiter asks again after this, doubling up to the longest: a lock held for a whole fetch is asked about a few
// times, and a block that lands is found within a few milliseconds.
constexpr auto kFirstPause = std::chrono::microseconds(100);
constexpr auto kLongestPause = std::chrono::milliseconds(2);

std::uint64_t byte_of(const fs::path& object, std::uint64_t index) {
    const std::string name = object.filename().string();
    std::uint64_t prefix = 0;
    // The folder's name is hex digits (disk_cache.cpp's hash_text); anything else shares the bytes of prefix 0.
    std::from_chars(name.data(), name.data() + std::min<std::size_t>(name.size(), kObjectHexDigits), prefix, 16);
    prefix &= (std::uint64_t{1} << kObjectBits) - 1;
    return (prefix << kIndexBits) | (index & ((std::uint64_t{1} << kIndexBits) - 1));
}

struct flock byte_lock(short type, std::uint64_t byte) {
    struct flock lock {};
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    lock.l_start = static_cast<off_t>(byte);
    lock.l_len = 1;
    return lock;
}

}  // namespace

FetchLock::~FetchLock() { owner_.unlock(byte_); }

FetchLocks::FetchLocks(fs::path folder) : path_(std::move(folder) / kLockFile) {}

FetchLocks::~FetchLocks() {
    if (fd_ >= 0) ::close(fd_);  // lets go of every lock still held
}

int FetchLocks::file() {
    if (fd_ >= 0 || failed_) return fd_;
    std::error_code error;
    fs::create_directories(path_.parent_path(), error);
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    failed_ = fd_ < 0;
    return fd_;
}

HeldLock FetchLocks::try_lock(const fs::path& object, std::uint64_t index) {
    const std::uint64_t byte = byte_of(object, index);
    const std::lock_guard guard(mutex_);
    if (const auto found = held_.find(byte); found != held_.end()) {
        ++found->second;
        return std::make_shared<const FetchLock>(*this, byte);
    }
    if (const int fd = file(); fd >= 0) {
        struct flock lock = byte_lock(F_WRLCK, byte);
        while (::fcntl(fd, F_OFD_SETLK, &lock) != 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EACCES) return nullptr;
            break;  // no locks on this file system: this process fetches, as if none held it
        }
    }
    held_.emplace(byte, 1);
    return std::make_shared<const FetchLock>(*this, byte);
}

bool FetchLocks::held_elsewhere(const fs::path& object, std::uint64_t index) {
    const std::lock_guard guard(mutex_);
    const int fd = file();
    if (fd < 0) return false;
    struct flock lock = byte_lock(F_WRLCK, byte_of(object, index));
    // Tells of a lock of another open file description only: this process's own do not conflict with it.
    if (::fcntl(fd, F_OFD_GETLK, &lock) != 0) return false;
    return lock.l_type != F_UNLCK;
}

bool FetchLocks::wait_while_held_elsewhere(const fs::path& object, std::uint64_t index,
                                           std::chrono::steady_clock::time_point deadline) {
    if (!held_elsewhere(object, index)) return true;
    count_waiter(true);
    std::chrono::steady_clock::duration pause = kFirstPause;
    bool gone = false;
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) break;
        std::this_thread::sleep_for(std::min(pause, deadline - now));
        pause = std::min<std::chrono::steady_clock::duration>(2 * pause, kLongestPause);
        if (!held_elsewhere(object, index)) {
            gone = true;
            break;
        }
    }
    count_waiter(false);
    return gone;
}

bool FetchLocks::someone_waits() {
    const std::lock_guard guard(mutex_);
    const int fd = file();
    if (fd < 0) return false;
    struct flock lock = byte_lock(F_WRLCK, kWaitersByte);
    return ::fcntl(fd, F_OFD_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
}

void FetchLocks::count_waiter(bool waits) {
    const std::lock_guard guard(mutex_);
    const int fd = file();
    if (fd < 0) return;
    if (waits ? waiters_++ > 0 : --waiters_ > 0) return;
    struct flock lock = byte_lock(waits ? F_RDLCK : F_UNLCK, kWaitersByte);
    // A lock not taken only leaves the waited-for process's writer at its own priority.
    ::fcntl(fd, F_OFD_SETLK, &lock);
}

void FetchLocks::unlock(std::uint64_t byte) {
    const std::lock_guard guard(mutex_);
    const auto found = held_.find(byte);
    if (found == held_.end() || --found->second > 0) return;
    held_.erase(found);
    if (fd_ >= 0) {
        struct flock lock = byte_lock(F_UNLCK, byte);
        ::fcntl(fd_, F_OFD_SETLK, &lock);
    }
}

}  // namespace tensorfs::remote
