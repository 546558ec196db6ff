#include "read_ahead.hpp"

#include <algorithm>

#include "tensorfs/background_queue.hpp"

namespace tensorfs::remote {
namespace {

// Streams of reads remembered per object: a reader, the kernel's read-ahead for it, a decoder working ahead.
constexpr std::size_t kStreams = 8;
// A read continues a stream when it starts at most kBehind before the stream's end (the kernel and the workers
// hand over a reader's requests out of order) or at most kGap after it (alignment padding between tensors).
constexpr std::uint64_t kBehind = std::uint64_t{16} << 20;
constexpr std::uint64_t kGap = std::uint64_t{128} << 10;
// A stream that starts this close to an object's beginning may take the progress another object's stream left.
constexpr std::uint64_t kStartOfObject = std::uint64_t{2} << 20;
// Range requests queued at most for the fetch threads (one per connection a context may use).
constexpr std::size_t kMaxQueuedFetches = 1024;

// The threads that fetch ahead of readers, for the whole process, made at the first read-ahead (after a daemon's
// fork) and ended at exit: a task holds its object only while it runs (its context while it waits). Each context
// lets at most its max_connections of them fetch at once.
BackgroundQueue& fetch_queue() {
    static BackgroundQueue queue(kMostConnections, kMaxQueuedFetches);
    return queue;
}

}  // namespace

ReadAhead::ReadAhead(std::shared_ptr<RemoteContext> context, const SourceObject& object, std::uint64_t serial,
                     const DiskBlocks& disk)
    : context_(std::move(context)), object_(object), serial_(serial), disk_(disk) {}

ReadAhead::Follow ReadAhead::follow(std::uint64_t offset, std::uint64_t end) const {
    const std::uint64_t ceiling = context_->window_ceiling();
    // Bytes the disk cache held before this process fetched anything of them do not open the window: a reader of a
    // cached tensor reads on from the disk, and fetching the bytes after it, which it may never read, is not wanted.
    // Once its reads leave the cached bytes, the window opens as for any reader going on in order.
    const bool from_cache = disk_.cached_before(offset, end);
    const std::lock_guard lock(mutex_);
    ++tick_;
    Stream* stream = nullptr;
    for (Stream& candidate : streams_) {
        if (offset + kBehind >= candidate.end && offset <= candidate.end + kGap) {
            stream = &candidate;
            break;
        }
    }
    Follow followed;
    if (stream == nullptr) {
        if (streams_.size() < kStreams) {
            streams_.emplace_back();
            stream = &streams_.back();
        } else {
            stream = &*std::min_element(streams_.begin(), streams_.end(),
                                        [](const Stream& a, const Stream& b) { return a.used < b.used; });
        }
        *stream = Stream{};
        stream->end = end;
        // Once it turns out sequential, its read-ahead starts from its first block: the reads before that were
        // fetched exactly, and the disk cache should get the whole run.
        stream->scheduled = offset / kBlockBytes;
        // The next shard of a reader going through shards in order: its window stays open.
        if (offset < kStartOfObject) stream->bytes = context_->take_progress();
    } else if (end > stream->end) {
        if (!from_cache) stream->bytes += end - std::max(offset, stream->end);
        stream->end = end;
    }
    stream->used = tick_;
    if (stream->bytes == 0) return followed;
    followed.ahead = std::min(ceiling, 2 * stream->bytes);
    followed.stream_end = stream->end;
    followed.scheduled = stream->scheduled;
    context_->show_window(followed.ahead);
    if (stream->end + followed.ahead >= object_.size()) context_->leave_progress(stream->bytes);
    return followed;
}

void ReadAhead::record_scheduled(std::uint64_t stream_end, std::uint64_t scheduled) const {
    const std::lock_guard lock(mutex_);
    for (Stream& stream : streams_) {
        if (stream.end == stream_end) stream.scheduled = std::max(stream.scheduled, scheduled);
    }
}

void ReadAhead::fetch_ahead(const Follow& followed, const std::weak_ptr<const BlockFetches>& fetches) const {
    const std::uint64_t size = object_.size();
    if (size == 0) return;
    const std::uint64_t last = (std::min(size, followed.stream_end + followed.ahead) - 1) / kBlockBytes;
    // Ranges of a share of the window each, so that the window is spread over the connections (a per-connection
    // cap is why servers are read with many), of 1 block to kRangeBytes.
    const std::uint64_t range_blocks = std::clamp<std::uint64_t>(
        context_->readahead_limit() / context_->max_connections() / kBlockBytes, 1, kRangeBytes / kBlockBytes);
    const std::uint64_t next_to_read = followed.stream_end / kBlockBytes;
    const std::uint64_t last_of_object = (size - 1) / kBlockBytes;
    std::uint64_t index = followed.scheduled;
    while (index <= last) {
        if (disk_.has(index) || context_->find(serial_, index).valid()) {
            ++index;
            continue;
        }
        std::uint64_t count = 1;
        std::size_t bytes = block_length(size, index);
        while (count < range_blocks && index + count <= last && !disk_.has(index + count)) {
            bytes += block_length(size, index + count);
            ++count;
        }
        // A range cut short by the window's end waits until the window has moved on by a whole range: as the reader
        // goes on block by block, the window would otherwise grow by one block at a time, and each request would
        // carry 1 MiB (a server's per-request cost, and a capped connection's first burst, for each). It goes now
        // while the window is still small (a stream's start, where small ranges reach the reader soonest), when
        // the reader needs its first block next, or when it ends at the object's end.
        if (count < range_blocks && index + count > last && last < last_of_object && index > next_to_read + 1 &&
            followed.ahead >= 2 * range_blocks * kBlockBytes) {
            break;
        }
        auto claim = std::make_shared<RemoteContext::Claim>();
        if (!context_->claim_ahead(serial_, index, count, bytes, *claim)) break;  // no connection or memory free
        // The claim stops before a block someone else fetches meanwhile: the rest waits for the next round.
        const std::size_t claimed = claim->promises.size();
        if (claimed > 0) {
            const bool queued = fetch_queue().offer([fetches, claim, context = context_] {
                const auto alive = fetches.lock();
                if (alive == nullptr) return context->give_up(*claim, nullptr);
                try {
                    alive->fetch_claimed(*claim, fetch_deadline(*context));
                } catch (...) {
                    // Its waiters have the error, or fetch the blocks again themselves.
                }
            });
            if (!queued) {
                context_->give_up(*claim, nullptr);
                break;
            }
        }
        index += std::max<std::size_t>(1, claimed);
    }
    record_scheduled(followed.stream_end, index);
}

}  // namespace tensorfs::remote
