#include "disk_cache.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <system_error>
#include <thread>
#include <vector>

#include "tensorfs/exit_signals.hpp"
#include "writer_priority.hpp"

namespace tensorfs::remote {
namespace fs = std::filesystem;

namespace {

constexpr const char* kBlockSuffix = ".block";
constexpr const char* kPieceSuffix = ".piece";
// A piece file: where the piece begins in its block (8 bytes, little-endian), then its bytes.
constexpr std::size_t kPieceHeaderBytes = 8;
constexpr const char* kTemporaryPrefix = ".tmp-";
constexpr const char* kUrlSuffix = ".url";
// Eviction brings the folder down to this share of the budget, so that it does not run again at every write.
constexpr double kEvictDownTo = 0.9;
// A temporary file older than this was left by a process that died mid-write.
constexpr auto kStaleTemporary = std::chrono::minutes(10);
// Blocks are written in pieces of this size: the page cache takes a folio as large as each write (up to 2 MiB), and
// on a virtual machine that hands free memory back to its host the large ones come from memory handed back, whose
// first touch costs about ten times more. 1 MiB writes took 2.2-2.8 s of system time per GiB there, 128 KiB writes
// 0.9-1.1 s (docs/benchmarks.md, "Disk cache writes in 128 KiB pieces"); elsewhere the extra calls cost little.
constexpr std::size_t kWritePiece = std::size_t{128} << 10;

fs::path block_file(const fs::path& object, std::uint64_t index) {
    return object / (std::to_string(index) + kBlockSuffix);
}

std::atomic<std::uint64_t> temporary_serial{0};

// 128 bits of FNV-1a with two different bases, each finished with splitmix64's mixer: file names for keys, with
// the key file in the folder to detect the (unheard-of) collision.
std::string hash_text(const std::string& key) {
    const auto fnv = [&](std::uint64_t hash) {
        for (const char c : key) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
        hash ^= hash >> 30;
        hash *= 0xbf58476d1ce4e5b9ULL;
        hash ^= hash >> 27;
        hash *= 0x94d049bb133111ebULL;
        return hash ^ (hash >> 31);
    };
    char text[33];
    std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(fnv(0xcbf29ce484222325ULL)),
                  static_cast<unsigned long long>(fnv(0x84222325cbf29ce4ULL)));
    return text;
}

// Writes all of `data` to `fd`, in pieces of at most `piece` bytes; false at the first error (errno tells it).
bool write_all(int fd, const char*& data, std::size_t& length, std::size_t piece) {
    while (length > 0) {
        const ssize_t written = ::write(fd, data, std::min(length, piece));
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return false;
        data += written;
        length -= static_cast<std::size_t>(written);
    }
    return true;
}

// With `direct`, the part of `data` that whole pages of memory hold goes around the page cache (O_DIRECT wants the
// buffer, the length and the offset aligned: a block's buffer is a mapping of its own); a file system that refuses
// O_DIRECT (tmpfs before Linux 6.6), and the tail, take ordinary writes.
bool write_file(const fs::path& path, const char* data, std::size_t length, bool direct) {
    constexpr std::size_t kPage = 4096;
    direct = direct && length >= kPage && reinterpret_cast<std::uintptr_t>(data) % kPage == 0;
    int fd = -1;
    if (direct) fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0644);
    if (fd < 0) {
        direct = false;
        fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (fd < 0) return false;
    if (direct) {
        const std::size_t aligned = length - length % kPage;
        std::size_t left = aligned;
        // EINVAL before a byte went: the file system refuses O_DIRECT writes, and the ordinary ones below write all.
        const bool refused = !write_all(fd, data, left, aligned) && errno == EINVAL && left == aligned;
        if ((left != 0 && !refused) || ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_DIRECT) != 0) {
            ::close(fd);
            return false;
        }
        length -= aligned - left;
    }
    const bool ok = write_all(fd, data, length, kWritePiece);
    return ::close(fd) == 0 && ok;
}

// Writes `data` to a temporary file beside `target`, then renames it over `target`.
bool publish(const fs::path& target, const char* data, std::size_t length, bool direct = false) {
    const fs::path temporary =
        target.parent_path() / (kTemporaryPrefix + std::to_string(::getpid()) + "-" +
                                std::to_string(temporary_serial.fetch_add(1)) + "-" + target.filename().string());
    if (!write_file(temporary, data, length, direct) || ::rename(temporary.c_str(), target.c_str()) != 0) {
        ::unlink(temporary.c_str());
        return false;
    }
    return true;
}

// Where the piece in the open piece file `fd` begins and ends in its block; nullopt when the file holds none.
std::optional<std::pair<std::size_t, std::size_t>> piece_span(int fd) {
    unsigned char header[kPieceHeaderBytes];
    struct stat status {};
    if (::pread(fd, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header) || ::fstat(fd, &status) != 0 ||
        static_cast<std::size_t>(status.st_size) <= kPieceHeaderBytes) {
        return std::nullopt;
    }
    std::size_t begin = 0;
    for (std::size_t i = 0; i < kPieceHeaderBytes; ++i) begin |= static_cast<std::size_t>(header[i]) << (8 * i);
    return std::pair{begin, begin + static_cast<std::size_t>(status.st_size) - kPieceHeaderBytes};
}

std::optional<std::string> read_small_file(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string text;
    char buffer[4096];
    for (ssize_t got; (got = ::read(fd, buffer, sizeof buffer)) != 0;) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 || text.size() > (1 << 20)) {
            ::close(fd);
            return std::nullopt;
        }
        text.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(fd);
    return text;
}

}  // namespace

DiskCache::DiskCache(fs::path folder, std::uint64_t budget, QueuedBytes queued, std::size_t max_queued, bool direct)
    : folder_(fs::absolute(folder) / "v1"),
      budget_(budget),
      queued_bytes_(std::move(queued)),
      max_queued_(max_queued),
      direct_(direct),
      fetch_locks_(folder_) {}

DiskCache::~DiskCache() { finish_writes(); }

void DiskCache::finish_writes() {
    {
        const std::lock_guard lock(queue_mutex_);
        stopping_ = true;
    }
    queue_changed_.notify_all();
    if (writer_.joinable()) writer_.join();
}

void DiskCache::write_later(const fs::path& object, std::uint64_t first, const std::vector<BlockPtr>& blocks,
                            const std::vector<HeldLock>& locks) {
    std::unique_lock lock(queue_mutex_);
    if (queued_bytes_) {
        for (const BlockPtr& block : blocks) {
            if (block) queued_bytes_(block, true);
        }
    }
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        if (blocks[i]) {
            enqueue(lock, Write{object, first + i, blocks[i], nullptr, i < locks.size() ? locks[i] : nullptr});
        }
    }
}

void DiskCache::write_piece_later(const fs::path& object, std::uint64_t index, std::shared_ptr<const Piece> piece,
                                  HeldLock fetch_lock) {
    if (!enabled() || piece == nullptr || piece->bytes.empty()) return;
    std::unique_lock lock(queue_mutex_);
    enqueue(lock, Write{object, index, nullptr, std::move(piece), std::move(fetch_lock)});
}

void DiskCache::enqueue(std::unique_lock<std::mutex>& lock, Write write) {
    const std::size_t length = write.bytes();
    queue_changed_.wait(lock, [&] { return queue_bytes_ == 0 || queue_bytes_ + length <= max_queued_; });
    queue_bytes_ += length;
    queue_.push_back(std::move(write));
    if (!writer_.joinable()) {
        start_threads_blocking_exit_signals([this] { writer_ = std::thread([this] { write_queued(); }); });
    }
    queue_changed_.notify_all();
}

void DiskCache::wait_written() {
    std::unique_lock lock(queue_mutex_);
    ++waiting_;
    queue_changed_.wait(lock, [&] { return queue_bytes_ == 0; });
    --waiting_;
}

// The writer thread: every queued block, also those queued when the cache is told to stop.
void DiskCache::write_queued() {
    // Named for whoever looks at the daemon's threads (`top -H`, /proc/PID/task/*/comm; the tests find it so).
    pthread_setname_np(pthread_self(), kWriterThreadName);
    WriterPriority priority(max_queued_);
    std::unique_lock lock(queue_mutex_);
    for (;;) {
        queue_changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left
        // Another process waiting for a block (fetch_locks.hpp) may wait for one of these.
        priority.follow(queue_bytes_, stopping_ || waiting_ > 0 || fetch_locks_.someone_waits());
        Write next = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        const std::size_t length = next.bytes();
        if (next.block) {
            write(next.object, next.index, next.block->bytes(), next.block->length);
            if (queued_bytes_) queued_bytes_(next.block, false);
        } else {
            write_piece(next.object, next.index, *next.piece);
        }
        next = Write{};  // lets go of its fetch lock: it is on disk (or could not be written), for whoever waits
        lock.lock();
        queue_bytes_ -= length;
        queue_changed_.notify_all();
    }
}

std::optional<fs::path> DiskCache::object_folder(const std::string& key) {
    if (!enabled()) return std::nullopt;
    const fs::path object = folder_ / hash_text(key);
    const fs::path key_file = object / "key";
    if (const auto stored = read_small_file(key_file)) {
        if (*stored == key) return object;
        return std::nullopt;  // a collision: this object goes uncached
    }
    std::error_code error;
    fs::create_directories(object, error);
    if (error) return std::nullopt;
    publish(key_file, key.data(), key.size());
    const auto stored = read_small_file(key_file);  // another process may have published its key first
    if (stored && *stored == key) return object;
    return std::nullopt;
}

// The file holds five lines: the URL (to detect collisions), the ETag, the Last-Modified, the size, and the name
// of the object's folder. Header values and URLs hold no line breaks.
std::optional<DiskCache::Remembered> DiskCache::remembered(const std::string& url) const {
    if (!enabled()) return std::nullopt;
    const auto text = read_small_file(folder_ / (hash_text(url) + kUrlSuffix));
    if (!text) return std::nullopt;
    std::vector<std::string> lines;
    for (std::size_t start = 0; start < text->size();) {
        const std::size_t end = text->find('\n', start);
        if (end == std::string::npos) return std::nullopt;
        lines.push_back(text->substr(start, end - start));
        start = end + 1;
    }
    if (lines.size() != 5 || lines[0] != url || lines[4].empty() || lines[4].find('/') != std::string::npos) {
        return std::nullopt;
    }
    Remembered what{lines[1], lines[2], 0, folder_ / lines[4]};
    const auto [stop, error] = std::from_chars(lines[3].data(), lines[3].data() + lines[3].size(), what.size);
    if (error != std::errc() || stop != lines[3].data() + lines[3].size()) return std::nullopt;
    return what;
}

void DiskCache::remember(const std::string& url, const Remembered& what) {
    if (!enabled()) return;
    for (const std::string* line : {&url, &what.etag, &what.last_modified}) {
        if (line->find('\n') != std::string::npos) return;
    }
    const std::string text = url + "\n" + what.etag + "\n" + what.last_modified + "\n" + std::to_string(what.size) +
                             "\n" + what.object.filename().string() + "\n";
    std::error_code error;
    fs::create_directories(folder_, error);
    publish(folder_ / (hash_text(url) + kUrlSuffix), text.data(), text.size());
}

bool DiskCache::read(const fs::path& object, std::uint64_t index, char* dst, std::size_t length) {
    const BlockPart whole{0, length, dst};
    return read_parts(object, index, length, {&whole, 1}, true);
}

std::optional<OpenFile> DiskCache::open_block(const fs::path& object, std::uint64_t index, std::size_t block_length,
                                              bool touch) {
    const fs::path path = block_file(object, index);
    OpenFile file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.fd() < 0) return std::nullopt;
    struct stat status {};
    if (::fstat(file.fd(), &status) != 0 || static_cast<std::uint64_t>(status.st_size) != block_length) {
        ::unlink(path.c_str());  // not what a finished block looks like: never serve it
        return std::nullopt;
    }
    if (touch) ::futimens(file.fd(), nullptr);  // now the most recently used: eviction goes by mtime
    return file;
}

bool DiskCache::read_parts(const fs::path& object, std::uint64_t index, std::size_t block_length,
                           std::span<const BlockPart> parts, bool touch) {
    const std::optional<OpenFile> file = open_block(object, index, block_length, touch);
    if (!file) return false;
    for (const BlockPart& part : parts) {
        for (std::size_t done = 0; done < part.length;) {
            const ssize_t got =
                ::pread(file->fd(), part.out + done, part.length - done, static_cast<off_t>(part.from + done));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                ::unlink(block_file(object, index).c_str());  // unreadable: never serve it
                return false;
            }
            done += static_cast<std::size_t>(got);
        }
    }
    return true;
}

void DiskCache::read_ahead(const fs::path& object, std::uint64_t index) const {
    const int fd = ::open(block_file(object, index).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
    ::close(fd);
}

bool DiskCache::has(const fs::path& object, std::uint64_t index, std::size_t block_length) const {
    struct stat status {};
    const fs::path path = block_file(object, index);
    return ::stat(path.c_str(), &status) == 0 && static_cast<std::uint64_t>(status.st_size) == block_length;
}

void DiskCache::remove_object(const fs::path& object) {
    std::error_code error;
    for (fs::directory_iterator files(object, error), end; !error && files != end; files.increment(error)) {
        const std::string name = files->path().filename().string();
        if (name.ends_with(kBlockSuffix) || name.ends_with(kPieceSuffix)) ::unlink(files->path().c_str());
    }
    const std::lock_guard lock(mutex_);
    used_.reset();  // counted again at the next write
}

void DiskCache::write(const fs::path& object, std::uint64_t index, const char* data, std::size_t length) {
    const fs::path path = block_file(object, index);
    if (!publish(path, data, length, direct_)) {
        // The object's folder may have been evicted by another process: make it again, once.
        std::error_code error;
        fs::create_directories(object, error);
        if (error || !publish(path, data, length, direct_)) return;
    }
    // The whole block holds what a piece of it held.
    ::unlink((object / (std::to_string(index) + kPieceSuffix)).c_str());
    count_written(length);
}

void DiskCache::write_piece(const fs::path& object, std::uint64_t index, const Piece& piece) {
    if (!enabled() || piece.bytes.empty()) return;
    if (has_block_file(object, index)) return;  // written whole meanwhile
    const Piece kept = merged(read_piece(object, index).value_or(Piece{}), piece);
    std::string file(kPieceHeaderBytes, '\0');
    for (std::size_t i = 0; i < kPieceHeaderBytes; ++i) file[i] = static_cast<char>((kept.begin >> (8 * i)) & 0xff);
    file += kept.bytes;
    const fs::path path = object / (std::to_string(index) + kPieceSuffix);
    if (!publish(path, file.data(), file.size())) {
        std::error_code error;
        fs::create_directories(object, error);
        if (error || !publish(path, file.data(), file.size())) return;
    }
    count_written(piece.bytes.size());
}

std::optional<Piece> DiskCache::read_piece(const fs::path& object, std::uint64_t index) {
    if (!enabled()) return std::nullopt;
    const auto file = read_small_file(object / (std::to_string(index) + kPieceSuffix));
    if (!file || file->size() <= kPieceHeaderBytes) return std::nullopt;
    Piece piece;
    for (std::size_t i = 0; i < kPieceHeaderBytes; ++i) {
        piece.begin |= static_cast<std::size_t>(static_cast<unsigned char>((*file)[i])) << (8 * i);
    }
    piece.bytes = file->substr(kPieceHeaderBytes);
    return piece;
}

std::size_t DiskCache::read_from_piece(const fs::path& object, std::uint64_t index, std::size_t from, char* dst,
                                       std::size_t length) {
    if (!enabled()) return 0;
    const int fd = ::open((object / (std::to_string(index) + kPieceSuffix)).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    const auto span = piece_span(fd);
    const std::size_t begin = span ? span->first : 0;
    const std::size_t end = span ? span->second : 0;
    bool held = span && from >= begin && from < end;
    const std::size_t count = held ? std::min(length, end - from) : 0;
    std::size_t done = 0;
    while (held && done < count) {
        const ssize_t got = ::pread(fd, dst + done, count - done,
                                    static_cast<off_t>(kPieceHeaderBytes + from - begin + done));
        if (got < 0 && errno == EINTR) continue;
        held = got > 0;
        if (held) done += static_cast<std::size_t>(got);
    }
    if (held) ::futimens(fd, nullptr);  // used now: eviction goes by mtime
    ::close(fd);
    return held ? count : 0;
}

std::optional<std::size_t> DiskCache::piece_begin(const fs::path& object, std::uint64_t index) const {
    if (!enabled()) return std::nullopt;
    const int fd = ::open((object / (std::to_string(index) + kPieceSuffix)).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    const auto span = piece_span(fd);
    ::close(fd);
    if (!span) return std::nullopt;
    return span->first;
}

bool DiskCache::has_block_file(const fs::path& object, std::uint64_t index) const {
    struct stat status {};
    return ::stat(block_file(object, index).c_str(), &status) == 0;
}

void DiskCache::count_written(std::uint64_t bytes) {
    {
        const std::lock_guard lock(mutex_);
        if (used_) *used_ += bytes;
    }
    evict_if_over_budget();
}

void DiskCache::evict_if_over_budget() {
    const std::lock_guard lock(mutex_);
    if (used_ && *used_ <= budget_) return;
    used_ = evict();
}

// Scans the folder, removes stale temporary files and, when over budget, the least recently used blocks. Returns
// the bytes of blocks left. Another process already evicting: this one only counts.
std::uint64_t DiskCache::evict() {
    const int lock_fd = lock_for_eviction(folder_, false);
    const bool evicting = lock_fd >= 0;
    std::vector<StoredBlock> blocks;
    std::uint64_t total = 0;
    for (StoredObject& object : scan_cache_folder(folder_, evicting)) {
        for (StoredBlock& block : object.blocks) {
            total += block.size;
            blocks.push_back(std::move(block));
        }
    }
    if (evicting && total > budget_) {
        total = remove_least_recent(std::move(blocks), static_cast<std::uint64_t>(static_cast<double>(budget_) *
                                                                                  kEvictDownTo));
    }
    if (lock_fd >= 0) ::close(lock_fd);  // also releases the flock
    return total;
}

std::vector<StoredObject> scan_cache_folder(const fs::path& folder, bool remove_stale_temporaries) {
    std::vector<StoredObject> objects;
    const auto now = fs::file_time_type::clock::now();
    std::error_code error;
    for (fs::directory_iterator entries(folder, error), end; !error && entries != end; entries.increment(error)) {
        if (!entries->is_directory(error)) continue;
        StoredObject object{entries->path(), read_small_file(entries->path() / "key").value_or(""), {}};
        std::error_code inner;
        for (fs::directory_iterator files(object.folder, inner); !inner && files != end; files.increment(inner)) {
            const std::string name = files->path().filename().string();
            struct stat status {};
            if (::stat(files->path().c_str(), &status) != 0) continue;
            if (name.starts_with(kTemporaryPrefix)) {
                std::error_code time_error;
                if (remove_stale_temporaries &&
                    now - fs::last_write_time(files->path(), time_error) > kStaleTemporary) {
                    ::unlink(files->path().c_str());
                }
            } else if (name.ends_with(kBlockSuffix) || name.ends_with(kPieceSuffix)) {
                object.blocks.push_back({files->path(), static_cast<std::uint64_t>(status.st_size), status.st_mtim});
            }
        }
        objects.push_back(std::move(object));
    }
    return objects;
}

void forget_every_url(const fs::path& folder) {
    std::error_code error;
    for (fs::directory_iterator entries(folder, error), end; !error && entries != end; entries.increment(error)) {
        if (entries->path().filename().string().ends_with(kUrlSuffix)) ::unlink(entries->path().c_str());
    }
}

std::uint64_t remove_least_recent(std::vector<StoredBlock> blocks, std::uint64_t keep_bytes,
                                  std::optional<struct timespec> used_before) {
    const auto earlier = [](const struct timespec& a, const struct timespec& b) {
        return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
    };
    std::sort(blocks.begin(), blocks.end(),
              [&](const StoredBlock& a, const StoredBlock& b) { return earlier(a.used, b.used); });
    std::uint64_t total = 0;
    for (const StoredBlock& block : blocks) total += block.size;
    for (const StoredBlock& block : blocks) {
        const bool too_old = used_before && earlier(block.used, *used_before);
        if (!too_old && total <= keep_bytes) break;
        if (::unlink(block.path.c_str()) == 0 || errno == ENOENT) total -= block.size;
    }
    return total;
}

int lock_for_eviction(const fs::path& folder, bool wait) {
    const fs::path lock_path = folder / ".lock";
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    while (::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR) continue;
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace tensorfs::remote
