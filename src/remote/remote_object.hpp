// One file on a web server, the Hub or an object store, read by HTTP range requests.
//
// Opening it asks for its first bytes (which the parsers read first anyway) and records its size and identity
// (ETag, else Last-Modified); when the disk cache remembers the URL and still holds its first block, the request is
// conditional (If-None-Match), and a 304 answer, which has no body, lets the cache give the identity and the bytes.
// Header reads fetch exactly the ranges the parsers ask for past those first bytes, and keep them (written to the
// disk cache at once: they come before a daemon forks). Reads of tensors (read_following) follow the reader, not
// the tensor:
//   - a read that continues none of the object's recent streams fetches its block when it lies inside one, else
//     exactly its own bytes (when they are not in memory or in the disk cache): a random touch costs 1 MiB at most;
//     what it fetched is kept (parts of blocks as pieces, in memory and in the disk cache), so that a read of the
//     same bytes later, also in another mount, is served from them, and a block fetched whole later asks only for the
//     rest (waiting for an exact fetch still under way, exact_fetches.hpp);
//   - a read that continues a stream (starts near where one ended) fetches whole blocks of kBlockBytes, and the
//     read-ahead keeps the blocks up to a window ahead fetched or on their way, in range requests of up to
//     kRangeBytes on up to max_connections connections; the window is twice what the stream has read in order,
//     up to about twice the link's measured rate × round trip (link_estimate.hpp) and at most readahead=, so it
//     grows only while reads go in order and only as far as the link needs, and it stays open across tensors
//     (their bytes follow each other in the file) and into the next object (a stream that reached an object's end
//     hands its progress to the next stream that starts at another object's beginning: the next shard);
//   - blocks in the disk cache are read straight from their file into the reader's buffer, never staged whole; a
//     reader going on through blocks the cache held before this process fetched any of them opens no window.
// Every range request carries If-Match and If-Range with the recorded ETag, and every answer is checked against
// the recorded identity and size: an object that changed fails the read with IoError, never serving old and new
// bytes mixed. A read waits for the network until its deadline, timeout= after it began (read_began.hpp), whether
// it fetches itself or waits for a fetch under way; past it, it fails with IoError.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "digest.hpp"
#include "exact_fetches.hpp"
#include "remote_context.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::remote {

// A range request of the read-ahead asks for up to kRangeBytes (several blocks of kBlockBytes, block.hpp). See
// docs/benchmarks.md, section "load", for the measurements behind them.
inline constexpr std::size_t kRangeBytes = std::size_t{8} << 20;

class RemoteObject;

// The checksum a store publishes for a whole object: its kind, its lower-case hex digits, and how messages name it.
struct PublishedChecksum {
    Digest::Kind kind = Digest::Kind::Sha256;
    std::string hex;
    std::string name;
};
// Asks the store for an object's published checksum (when --verify wants it, never at open): nullopt when it
// publishes none. Throws IoError when the store cannot be asked.
using ChecksumLookup = std::function<std::optional<PublishedChecksum>(const RemoteObject&)>;

class RemoteObject : public SourceObject, public std::enable_shared_from_this<RemoteObject> {
public:
    // Opens the object at `url`, named `name` in messages. nullptr when the server says it does not exist (404,
    // 410). Throws InvalidSource naming it when it cannot be reached, refuses the credentials or cannot serve
    // byte ranges.
    static std::shared_ptr<RemoteObject> open(std::shared_ptr<RemoteContext> context, std::string name,
                                              std::string url);

    void read(std::uint64_t offset, std::size_t length, void* dst) const override;
    void read_following(std::uint64_t offset, std::size_t length, void* dst) const override;

    // What opening it learned; public for the constructor's sake (open() is the way to make one).
    struct Identity {
        std::uint64_t size = 0;
        std::string etag;            // empty when the server gave none
        std::string last_modified;   // empty when the server gave none
        timespec modified{};
    };
    RemoteObject(std::shared_ptr<RemoteContext> context, std::string name, std::string url, Identity identity,
                 std::string head);

    // The bytes up to the end of the first one's block, when the disk cache has that block and this process does
    // not hold it in memory.
    std::optional<FileSpan> cached_span(std::uint64_t offset, std::size_t length) const override;

    std::uint64_t fill_cache(std::uint64_t offset, std::uint64_t length, const Progress& progress) const override;

    // Where check_published_checksum() finds the checksum to compare with (the Hub's listing, an S3 HEAD); set by
    // the folder that opened the object, before anyone reads it. Without one, the object has none.
    void set_checksum_lookup(ChecksumLookup lookup) { checksum_lookup_ = std::move(lookup); }
    std::optional<ChecksumCheck> check_published_checksum() const override;
    void evict_cached() const override;

    // The URL the disk cache files its blocks under (with the identity), when requests go to one that changes with
    // something the bytes do not: the Hub's commit, so that a file a push left alone keeps its cached blocks. Set by
    // the folder that opened the object, before anyone reads it; the request URL by default.
    void set_cache_address(std::string url) { cache_address_ = std::move(url); }

    const std::string& url() const { return url_; }
    const std::string& etag() const { return identity_.etag; }

private:
    using Deadline = std::chrono::steady_clock::time_point;
    // When a read that begins now (or began as read_began() says) stops waiting for the network.
    Deadline read_deadline() const;
    Deadline fetch_deadline() const;

    std::uint64_t block_count() const { return (size() + kBlockBytes - 1) / kBlockBytes; }
    // Whether block `index` is in the disk cache (asked of the disk once, then remembered).
    bool on_disk(std::uint64_t index) const;
    // Called at the first read of block `index` from the disk cache: when the reader goes in order, the kernel is
    // asked to read the next blocks' files ahead of it.
    void read_ahead_on_disk(std::uint64_t index) const;
    // The disk cache's folder for this object; nullopt when it is not cached.
    const std::optional<std::filesystem::path>& cache_folder() const;

    // What a read learns of the reader's stream: how far ahead of the stream's end blocks should be fetched (0: a
    // read that is not (yet) sequential), and from which block the read-ahead goes on.
    struct Follow {
        std::uint64_t ahead = 0;
        std::uint64_t stream_end = 0;
        std::uint64_t scheduled = 0;
    };
    Follow follow(std::uint64_t offset, std::uint64_t end) const;
    // What every read of a reader's bytes does first: lets the head go, follows the reader's stream and starts the
    // read-ahead it calls for (unless the read is late already or the server silent). Returns what follow() learned.
    Follow begin_read(std::uint64_t offset, std::uint64_t end, Deadline deadline) const;
    // Lets the first bytes fetched at open go, as a piece of block 0 (see head_); returns their count when they were
    // the whole block 0 (a small file), else 0.
    std::size_t drop_head() const;
    // Where an exact fetch from byte `after` to `end` stops (block `index` holds byte `after`): where the first piece
    // kept of a block from `index` on (in memory or in the disk cache) begins, when that is after `after` and before
    // `end`; else `end`.
    std::uint64_t stop_at_kept_piece(std::uint64_t index, std::uint64_t end, std::uint64_t after) const;
    // Whether every block of bytes [offset, end) was in the disk cache before this process fetched any of it.
    bool cached_before(std::uint64_t offset, std::uint64_t end) const;
    // How what a read fetched goes to the disk cache: queued for its writer thread, or written before the read
    // returns (reads that may come before a daemon forks, whose threads would not be in the daemon).
    enum class DiskWrite { Later, Now };
    // Bytes of a read, block by block: from memory or the disk cache, else fetched (exactly, or whole blocks).
    void read_blocks(std::uint64_t offset, std::size_t length, char* out, bool exact, Deadline deadline,
                     DiskWrite disk_write) const;
    void read_ahead(const Follow& follow) const;
    void record_scheduled(std::uint64_t stream_end, std::uint64_t scheduled) const;
    // Copies bytes [from, from + length) of block `index` to `dst` from memory or the disk cache; false when the
    // block is in neither. A block on its way is waited for until `deadline` (then IoError).
    bool serve_cached(std::uint64_t index, std::uint64_t from, std::size_t length, char* dst,
                      Deadline deadline) const;
    // The bytes from `from` on (at most `length`) that the piece an exact read kept of the block holds, in memory or
    // in the disk cache: how many it copied, 0 when none holds byte `from`.
    std::size_t serve_piece(std::uint64_t index, std::uint64_t from, std::size_t length, char* dst) const;
    // Fetches the claimed blocks (in one range request, or one per gap between pieces kept of them) by `deadline`,
    // hands them to their waiters and queues them for the disk.
    // Throws IoError (which the waiters get too) when they cannot be fetched.
    void fetch_blocks(RemoteContext::Claim& claim, Deadline deadline) const;
    // The bytes of block `index` (`block_length` long) that exact reads kept, in memory or in the disk cache, taken
    // from the memory; nullopt when none are.
    std::optional<Piece> take_kept_piece(std::uint64_t index, std::size_t block_length) const;
    // A buffer for each of blocks [first, first + count): a block dropped from memory frees its own bytes, never
    // waiting for the other blocks its range brought.
    std::vector<std::shared_ptr<char[]>> new_block_buffers(std::uint64_t first, std::size_t count) const;
    // Makes the claimed blocks of their buffers, hands them to their waiters and queues them for the disk (or writes
    // them there).
    void hand_over(RemoteContext::Claim& claim, const std::vector<std::shared_ptr<char[]>>& buffers,
                   DiskWrite disk_write) const;
    // Keeps what an exact fetch brought, bytes [offset, offset + length): its whole blocks as fetched blocks, the
    // parts of blocks at its ends as pieces (see RemoteContext::keep_piece).
    void keep_fetched(std::uint64_t offset, std::size_t length, const char* bytes, DiskWrite disk_write) const;
    std::size_t block_length(std::uint64_t index) const;
    // Fetches bytes [offset, offset + length) into `dst` by `deadline`, checking that the object is still the one
    // opened.
    void fetch(std::uint64_t offset, std::size_t length, char* dst, Deadline deadline) const;
    // The same for the bytes from `offset` on that fill the buffers of `into`, one after the other.
    void fetch(std::uint64_t offset, std::vector<std::span<char>> into, Deadline deadline) const;
    // Throws IoError while the server is silent (RemoteContext::no_answer): a read fails at once instead of
    // waiting a timeout of its own for it.
    void fail_if_silent() const;
    [[noreturn]] void changed(const std::string& how) const;
    std::vector<std::string> precondition_headers() const;

    std::shared_ptr<RemoteContext> context_;
    const std::string url_;
    std::string cache_address_;
    const Identity identity_;
    const std::uint64_t serial_;
    ChecksumLookup checksum_lookup_;

    // The first bytes, fetched when opened, for the parsers' reads; let go at the first read of a tensor (parsing
    // is over by then), so that a model of thousands of shards does not keep 64 KiB of each: they become a piece of
    // block 0 then (in the disk cache, and in memory within the pieces' share of the budget).
    mutable std::mutex head_mutex_;
    mutable std::string head_;
    mutable std::atomic<bool> head_dropped_{false};

    mutable std::mutex mutex_;
    mutable std::string location_;      // where `url_` last redirected to: asked directly until it fails
    // The recent streams of reads: where each ended, how much it read in order, up to where its read-ahead was
    // scheduled, when it was last used (for replacing the oldest).
    struct Stream {
        std::uint64_t end = 0;
        std::uint64_t bytes = 0;
        std::uint64_t scheduled = 0;  // in blocks
        std::uint64_t used = 0;
    };
    mutable std::vector<Stream> streams_;
    mutable std::uint64_t tick_ = 0;
    // Per block: 0 not known, 1 in the disk cache (and marked used by this process), 2 not there when last asked,
    // 3 in the disk cache.
    mutable std::unique_ptr<std::atomic<std::uint8_t>[]> disk_state_;
    // Blocks before this one were asked of the kernel's read-ahead (DiskCache::read_ahead) for an in-order reader.
    mutable std::atomic<std::uint64_t> disk_read_ahead_end_{0};
    // Per block: some of its bytes were fetched by this process (so it was not all in the disk cache before).
    mutable std::unique_ptr<std::atomic<bool>[]> fetched_here_;
    mutable std::once_flag cache_folder_once_;
    mutable std::optional<std::filesystem::path> cache_folder_;
    // The folder the disk cache remembered for this URL, when it was opened as remembered (nothing to record then).
    std::optional<std::filesystem::path> remembered_folder_;
    mutable std::atomic<bool> changed_{false};
    mutable ExactFetches exact_fetches_;
};

}  // namespace tensorfs::remote
