// Fetched blocks of remote objects, kept on disk and shared by every process that uses the same folder:
//
//   DIR/v1/<hash of the object's key>/key          the key itself (URL, identity, block size), to detect collisions
//   DIR/v1/<hash of the object's key>/<N>.block    block N of the object, exactly its bytes
//   DIR/v1/<hash of the object's key>/<N>.piece    part of block N that an exact read fetched (see write_piece_later)
//   DIR/v1/<hash of a URL>.url                     what the URL answered when last opened: its identity, its size
//                                                  and its object's folder (see remembered())
//   DIR/v1/.fetching                               the fetch locks' file (one byte per block, never written)
//
// The key holds the object's identity (ETag, or Last-Modified and size), so a changed object never meets the
// blocks of its old self. A block is written to a temporary file and renamed into place: a process killed
// mid-write leaves a stray temporary file (cleaned later), never a torn block. A read touches the block's mtime,
// and when the folder grows past its budget the least recently used blocks are deleted (one process at a time,
// under an flock). Two processes may write or delete the same block at once: rename and unlink are atomic, an
// open descriptor keeps reading a deleted file, and a block that vanished is simply fetched again. Processes that
// want the same block at once fetch it once: the first takes its fetch lock (fetch_locks.hpp), held until the block
// is written here, and the others wait for it to land.
//
// Blocks are written by a thread of the cache's own, so that a slow disk (a busy machine's writes are throttled to
// its disk's speed) never holds a fetched block back from its readers; it writes at idle priority while it keeps up
// (writer_priority.hpp).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "block.hpp"
#include "fetch_locks.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::remote {

class DiskCache {
public:
    static constexpr std::size_t kMaxQueuedBytes = std::size_t{32} << 20;
    // The name of the thread that writes queued blocks (15 characters at most: Linux's limit).
    static constexpr const char* kWriterThreadName = "tensorfs-disk";

    // Told of each block a queued write holds, as it comes (true) and goes (false).
    using QueuedBytes = std::function<void(const BlockPtr& block, bool queued)>;

    // `budget` 0: no disk cache (every lookup misses, nothing is written).
    // `max_queued`: the most bytes write_later() holds queued (see there). `direct`: whole blocks are written
    // around the page cache (SourceOptions::disk_cache_writes_direct).
    DiskCache(std::filesystem::path folder, std::uint64_t budget, QueuedBytes queued = {},
              std::size_t max_queued = kMaxQueuedBytes, bool direct = false);
    // Finishes the writes still queued.
    ~DiskCache();
    DiskCache(const DiskCache&) = delete;
    DiskCache& operator=(const DiskCache&) = delete;

    bool enabled() const { return budget_ > 0; }
    const std::filesystem::path& folder() const { return folder_; }
    // Which process fetches a block that several want at once (fetch_locks.hpp).
    FetchLocks& fetch_locks() { return fetch_locks_; }

    // Where the blocks of the object with `key` live; nullopt when the cache is off or the folder of that hash
    // already belongs to another key.
    std::optional<std::filesystem::path> object_folder(const std::string& key);

    // Block `index` of the object in `object`: true and `length` bytes in `dst` when it is there whole.
    bool read(const std::filesystem::path& object, std::uint64_t index, char* dst, std::size_t length);

    // `parts` of block `index`, whose whole length is `block_length`, read straight into their buffers (a reply's:
    // the block is never staged in memory whole), from one open of its file. False when the block is not there
    // whole (one of another length is removed). `touch` marks it used (eviction goes by least recent use).
    bool read_parts(const std::filesystem::path& object, std::uint64_t index, std::size_t block_length,
                    std::span<const BlockPart> parts, bool touch);

    // Block `index`'s file, open for reading, when it is there whole (`block_length` bytes; one of another length is
    // removed, as read_parts does). `touch` marks it used. nullopt when it is not there.
    std::optional<OpenFile> open_block(const std::filesystem::path& object, std::uint64_t index,
                                       std::size_t block_length, bool touch);

    // Asks the kernel to start reading block `index`'s file into the page cache, so that a reader that gets to it
    // later finds it there instead of waiting on the disk. A hint: a block not there is skipped.
    void read_ahead(const std::filesystem::path& object, std::uint64_t index) const;

    // A part of block `index` that an exact read fetched: kept on disk (written on the writer thread) until the
    // whole block is written, which removes it, so that each byte is fetched once also across mounts. One piece file
    // per block: a later piece is merged with it (block.hpp). `lock` (the block's fetch lock, or null) is let go of
    // once it is written.
    void write_piece_later(const std::filesystem::path& object, std::uint64_t index,
                           std::shared_ptr<const Piece> piece, HeldLock lock = nullptr);
    // The same, written before it returns (no thread started).
    void write_piece(const std::filesystem::path& object, std::uint64_t index, const Piece& piece);
    // The piece of block `index`; nullopt when there is none.
    std::optional<Piece> read_piece(const std::filesystem::path& object, std::uint64_t index);
    // Bytes from `from` on (at most `length`) of block `index` from its piece: how many it copied to `dst`, 0 when
    // no piece holds byte `from`.
    std::size_t read_from_piece(const std::filesystem::path& object, std::uint64_t index, std::size_t from, char* dst,
                                std::size_t length);

    // Where the piece of block `index` begins in the block; nullopt when there is none.
    std::optional<std::size_t> piece_begin(const std::filesystem::path& object, std::uint64_t index) const;

    // Whether block `index` is there, `block_length` bytes long.
    bool has(const std::filesystem::path& object, std::uint64_t index, std::size_t block_length) const;

    // What opening `url` last learned, so that opening it again may ask whether it changed (a conditional request,
    // answered without a body) instead of fetching its first bytes again.
    struct Remembered {
        std::string etag;
        std::string last_modified;
        std::uint64_t size = 0;
        std::filesystem::path object;  // the folder of its blocks
    };
    std::optional<Remembered> remembered(const std::string& url) const;
    // Records it (failures only mean it is not remembered).
    void remember(const std::string& url, const Remembered& what);

    // Removes the blocks of the object in `object` (a file that failed its checksum).
    void remove_object(const std::filesystem::path& object);

    // Stores block `index`; failures (disk full, folder removed meanwhile) only mean the block is not kept.
    void write(const std::filesystem::path& object, std::uint64_t index, const char* data, std::size_t length);

    // write(), later, on the writer thread (started at the first call: a daemon forks after opening its source),
    // of blocks [first, first + blocks.size()), but those that are null. Waits while `max_queued` bytes are queued,
    // so that a disk that cannot keep up bounds the memory held. Every block counts as queued (`queued`) from the
    // call on: the caller holds them all while it waits. `locks[i]` (when given: the fetch locks of the blocks) is let
    // go of once block i is written, or could not be.
    void write_later(const std::filesystem::path& object, std::uint64_t first, const std::vector<BlockPtr>& blocks,
                     const std::vector<HeldLock>& locks = {});

    // Returns once every write queued so far is done.
    void wait_written();

    // Writes what is queued and ends the writer thread (the destructor does it too). An owner whose callback
    // (`queued`) uses its own members calls it first, while they are still alive.
    void finish_writes();

private:
    struct Write {
        std::filesystem::path object;
        std::uint64_t index;
        BlockPtr block;                      // a whole block, or
        std::shared_ptr<const Piece> piece;  // a piece of it
        HeldLock lock;                       // its fetch lock, let go of once it is written (or null)
        std::size_t bytes() const { return block ? block->length : piece->bytes.size(); }
    };
    // Waits for room in the queue, then queues `write` (with queue_mutex_ held by `lock`).
    void enqueue(std::unique_lock<std::mutex>& lock, Write write);
    void write_queued();
    // Counts `bytes` more in the folder, and evicts when it is over its budget.
    void count_written(std::uint64_t bytes);
    bool has_block_file(const std::filesystem::path& object, std::uint64_t index) const;

    void evict_if_over_budget();
    std::uint64_t evict();

    const std::filesystem::path folder_;  // DIR/v1, absolute
    const std::uint64_t budget_;
    const QueuedBytes queued_bytes_;
    const std::size_t max_queued_;
    const bool direct_;
    FetchLocks fetch_locks_;
    std::mutex mutex_;
    std::optional<std::uint64_t> used_;   // this process's estimate of the bytes in the folder; scanned at first

    std::mutex queue_mutex_;
    std::condition_variable queue_changed_;
    std::deque<Write> queue_;
    std::size_t queue_bytes_ = 0;   // of the queued blocks and the one being written
    bool stopping_ = false;
    std::size_t waiting_ = 0;       // callers of wait_written() waiting
    std::thread writer_;
};

// The cache folder as a whole, as eviction and `tensorfs cache` (ls, du, prune, clear) see it. Removing blocks is
// safe while mounts use the folder: a reader with a block open keeps reading it whole, and a block that vanished
// is fetched again.

struct StoredBlock {
    std::filesystem::path path;
    std::uint64_t size = 0;
    struct timespec used {};  // its mtime: when it was last written or read
};

struct StoredObject {
    std::filesystem::path folder;
    std::string key;  // as object_folder() wrote it (URL, identity, size, block size); empty when missing
    std::vector<StoredBlock> blocks;  // its block files and the pieces of blocks (write_piece_later)
};

// Every object and block in `folder` (a DiskCache's folder()). `remove_stale_temporaries`: also deletes the
// temporary files that processes killed mid-write left behind.
std::vector<StoredObject> scan_cache_folder(const std::filesystem::path& folder, bool remove_stale_temporaries);

// Deletes the records of what URLs answered when opened (DiskCache::remembered), as `tensorfs cache clear` does.
void forget_every_url(const std::filesystem::path& folder);

// Deletes blocks, least recently used first: every one used before `used_before` (when given), then more until
// at most `keep_bytes` are left. Returns the bytes of the blocks left.
std::uint64_t remove_least_recent(std::vector<StoredBlock> blocks, std::uint64_t keep_bytes,
                                  std::optional<struct timespec> used_before = std::nullopt);

// The lock that lets one process at a time remove blocks from `folder`: its descriptor (close it to release), or
// -1 when another process holds it and `wait` is false, or the folder cannot be locked.
int lock_for_eviction(const std::filesystem::path& folder, bool wait);

}  // namespace tensorfs::remote
