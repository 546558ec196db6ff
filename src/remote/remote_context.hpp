// What all remote objects of one source share: the HTTP client, the disk cache, the blocks recently fetched (in
// memory, so that the many 128 KiB reads inside a block cost one fetch), the fetches in flight (so that a block
// wanted by a reader and by the read-ahead at once is fetched once), the connections the read-ahead may use and
// the memory budget that blocks in flight, kept in memory and queued for the disk share.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "block.hpp"
#include "block_buffers.hpp"
#include "disk_cache.hpp"
#include "http_client.hpp"
#include "link_estimate.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs::remote {

// The line that tells a user why a server refused a request: the server's reason (HTTP status, S3's error code),
// where it came from, and what to do about it (set HF_TOKEN, check the AWS credentials...).
using ExplainRefusal = std::function<std::string(const Response&)>;

// How far ahead of a sequential reader blocks may be fetched with `options`: readahead=, at most half the memory
// budget (the other half holds the blocks being read and the disk cache's queue).
std::uint64_t readahead_limit_of(const SourceOptions& options);

class RemoteContext {
public:
    RemoteContext(const SourceOptions& options, std::shared_ptr<CredentialSource> credentials, ExplainRefusal explain);
    // Ends the disk cache's writer first: each write it finishes calls back into the memory accounting below,
    // whose members are destroyed before disk_ is.
    ~RemoteContext();

    HttpClient& http() { return http_; }
    DiskCache& disk() { return disk_; }
    RemoteCounters& counters() { return *counters_; }
    std::string refusal(const Response& response) const { return explain_(response); }

    // A number for each object, naming it in the keys below.
    std::uint64_t next_serial() { return serial_.fetch_add(1); }

    unsigned max_connections() const { return max_connections_; }
    // How long one read may wait for the network, retries included (timeout=).
    std::chrono::milliseconds timeout() const { return timeout_; }
    // readahead_limit_of() its options.
    std::uint64_t readahead_limit() const { return readahead_limit_; }
    // How far ahead they should be fetched now: about the link's measured rate × round trip (link_estimate.hpp),
    // within readahead_limit().
    std::uint64_t window_ceiling();

    // A buffer for a block of `length` bytes (block_buffers.hpp).
    std::shared_ptr<char[]> block_buffer(std::size_t length) { return buffers_->take(length); }

    // Block `index` of object `serial` when it is in memory (a ready future) or on its way; an invalid future
    // otherwise. A future that gives nullptr was a read-ahead that gave up, or a block that another process fetches
    // or the disk cache has: the reader reads it from the disk cache, or fetches it itself.
    std::shared_future<BlockPtr> find(std::uint64_t serial, std::uint64_t index);

    // Blocks [first, first + count) of object `serial` claimed for one fetch: the claim stops before the first block
    // that is in memory or on its way, so `promises` may be fewer than `count` (or none). `bytes` of the memory
    // budget count as in flight until deliver() or give_up(). A reader's claim, never refused: it waits while what
    // is in flight and queued for the disk fills the budget, so that every reader thread fetching a block of its own
    // (the read-ahead held back by a disk that falls behind) does not go past it.
    struct Claim {
        std::uint64_t serial = 0;
        std::uint64_t first = 0;
        std::vector<std::promise<BlockPtr>> promises;
        std::size_t bytes = 0;
        bool uses_connection = false;  // a read-ahead's: it holds one of max_connections until it ends
        std::size_t fetched_bytes = 0;  // what its fetch brought over the network: the link's rate counts it
    };
    Claim claim(std::uint64_t serial, std::uint64_t first, std::uint64_t count, std::size_t bytes);
    // A claim for bytes the caller fetched already, to keep: it waits only for the disk's queue, never for fetches
    // in flight (an exact read holds back the fetches of its bytes until it ends, so those would wait for it).
    Claim claim_fetched(std::uint64_t serial, std::uint64_t first, std::uint64_t count, std::size_t bytes);
    // A claim for the read-ahead: only when a connection is free and the budget has room for `bytes` in flight.
    bool claim_ahead(std::uint64_t serial, std::uint64_t first, std::uint64_t count, std::size_t bytes,
                     Claim& claim);

    // The claimed blocks, fetched (blocks[i] is block first + i): kept in memory and handed to their waiters. A null
    // block was not fetched (another process fetches it, or the disk cache has it): its waiters get nullptr.
    // `to_disk`: the caller queues them for the disk cache next (DiskCache::write_later); they count as queued from
    // here on, before they stop counting as in flight, so that no reader's claim sees room they still take.
    void deliver(Claim& claim, const std::vector<BlockPtr>& blocks, bool to_disk = false);
    // A reader read block `index` of object `serial` to its end: it goes to the end of the eviction order. A
    // sequential reader does not come back to it (the kernel's page cache has it), while the blocks fetched ahead of
    // it are still to be read: without this, the oldest of those went first and were fetched again.
    void consumed(std::uint64_t serial, std::uint64_t index);
    // The claimed blocks were not fetched: waiters get `error`, or nullptr (fetch it yourself) when it is null.
    void give_up(Claim& claim, std::exception_ptr error);

    // Bytes of one block fetched exactly (by a random reader, or before its stream turned out sequential). Kept
    // (merged with the piece kept of the same block before; the oldest dropped past an eighth of the memory budget,
    // counted in it) so that fetching the block whole later asks only for the rest: each byte is fetched once.
    void keep_piece(std::uint64_t serial, std::uint64_t index, Piece piece);
    // The piece kept of block `index` of object `serial`, removed from the memory; nullopt when none is.
    std::optional<Piece> take_piece(std::uint64_t serial, std::uint64_t index);
    // Bytes from `from` on (at most `length`) of block `index` of object `serial` from its piece in memory: how many it
    // copied to `dst`, 0 when no piece holds byte `from`.
    std::size_t read_piece(std::uint64_t serial, std::uint64_t index, std::size_t from, std::size_t length, char* dst);
    // Where the piece kept of block `index` of object `serial` begins in the block; nullopt when none is.
    std::optional<std::size_t> piece_begin(std::uint64_t serial, std::uint64_t index);

    // A block queued for the disk cache (true), or written (false): counted against the budget once, also while
    // it is kept for readers too (the disk cache calls it; a block deliver() counted already is not counted again).
    void queued_for_disk(const BlockPtr& block, bool queued);

    // A range answer of `bytes` that took `first_byte_us` to its first byte and `total_us` to its last: the
    // measured round trip and rate of one connection (recent averages, shown in the stats, sizing the window).
    void measured(std::uint64_t bytes, std::uint64_t first_byte_us, std::uint64_t total_us);

    // A request got no answer by its deadline (the server is down or hangs): the server is silent. Until it sends
    // something again, for one timeout at most, every read that would wait for it fails at once instead of waiting a
    // whole timeout of its own: the kernel asks again for a page right after its read failed, and readers held up
    // behind the first ones come only then, so a storm of faults would otherwise last two timeouts or more. One
    // timeout after the last request that got no answer, reads ask the server again.
    void no_answer();
    // The server sent something (an answer's headers, bytes of a body): it is not silent.
    void answered();
    // How long ago a request got no answer, while the server is silent; nullopt when it is not.
    std::optional<std::chrono::steady_clock::duration> silence() const;
    // Whether the server is silent: no read-ahead starts then, and reads that would wait for it fail at once.
    bool silent() const { return silence().has_value(); }

    // The window of the last sequential reader, shown in the stats.
    void show_window(std::uint64_t bytes) { counters_->window_bytes.set(static_cast<std::int64_t>(bytes)); }

    // A sequential reader that reached the end of an object leaves its progress here; a reader that starts at the
    // beginning of another object soon after (the next shard) takes it, and its window stays open.
    void leave_progress(std::uint64_t bytes) { progress_left_.store(bytes); }
    std::uint64_t take_progress() { return progress_left_.exchange(0); }

private:
    using Key = std::pair<std::uint64_t, std::uint64_t>;
    void end_claim(Claim& claim);
    // Whether no block `key` is in memory or on its way. Called with mutex_ held.
    bool claimable(const Key& key) const;
    // claim() without waiting for room. Called with mutex_ held.
    Claim claim_locked(std::uint64_t serial, std::uint64_t first, std::uint64_t count, std::size_t bytes);
    // queued_for_disk() with mutex_ held.
    void count_queued(const BlockPtr& block, bool queued);
    // Bytes in flight, queued for the disk (and not kept for readers) and kept in pieces. Called with mutex_ held.
    std::uint64_t held() const;
    // What dropping recent blocks cannot free: bytes in flight, kept in pieces and queued for the disk, also those
    // of blocks kept for readers too (their buffers stay until written). Called with mutex_ held.
    std::uint64_t pinned() const;
    // A block enters or leaves the memory of recent blocks. Called with mutex_ held.
    void keep_recent(const BlockPtr& block);
    void drop_recent(const BlockPtr& block);
    // Drops the least recently used blocks until everything fits the budget. Called with mutex_ held.
    void trim();
    // Shows the memory held in the counters and wakes the claims waiting for room. Called with mutex_ held.
    void memory_changed();
    void show_link();    // with mutex_ held

    std::shared_ptr<RemoteCounters> counters_;
    HttpClient http_;
    DiskCache disk_;
    ExplainRefusal explain_;
    std::atomic<std::uint64_t> serial_{0};
    const unsigned max_connections_;
    const std::chrono::milliseconds timeout_;
    const std::uint64_t memory_budget_;
    const std::uint64_t readahead_limit_;
    const std::shared_ptr<BlockBuffers> buffers_;
    std::atomic<std::uint64_t> progress_left_{0};

    std::mutex mutex_;
    std::condition_variable room_;  // the memory held went down (memory_changed())
    std::map<Key, std::shared_future<BlockPtr>> in_flight_;
    std::list<std::pair<Key, BlockPtr>> recent_;  // most recently used first, blocks read to their end last
    std::map<Key, std::list<std::pair<Key, BlockPtr>>::iterator> recent_index_;
    std::size_t recent_bytes_ = 0;
    // Blocks dropped from recent_ while still queued for the disk: in memory until written, so found there.
    std::map<Key, BlockPtr> leaving_;
    std::list<std::pair<Key, Piece>> pieces_;  // most recently kept first
    std::map<Key, std::list<std::pair<Key, Piece>>::iterator> piece_index_;
    std::size_t piece_bytes_ = 0;
    std::size_t in_flight_bytes_ = 0;
    std::size_t queued_only_bytes_ = 0;  // blocks queued for the disk and not also in recent_
    std::size_t queued_bytes_ = 0;       // every block queued for the disk
    unsigned connections_ = 0;
    LinkEstimate link_;

    std::atomic<bool> any_unanswered_{false};  // a request got no answer and the server sent nothing since
    std::atomic<std::chrono::steady_clock::rep> last_unanswered_{0};  // when the latest request got no answer
};

}  // namespace tensorfs::remote
