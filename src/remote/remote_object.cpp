#include "remote_object.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <thread>

#include "digest.hpp"
#include "log.hpp"
#include "tensorfs/background_queue.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/read_began.hpp"
#include "url.hpp"

namespace tensorfs::remote {
namespace {

// Asked for when an object is opened: a safetensors header or the first GGUF window mostly fits.
constexpr std::size_t kHeadBytes = 64 << 10;
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
// How far ahead of an in-order reader the disk cache's next blocks are read (a node that restarted reads its cache
// from the disk: each block file's read waited on the disk alone, one after another).
constexpr std::uint64_t kDiskReadAheadBlocks = 16;

// The threads that fetch ahead of readers, for the whole process, made at the first read-ahead (after a daemon's
// fork) and ended at exit: a task holds its object only while it runs (its context while it waits). Each context
// lets at most its max_connections of them fetch at once.
BackgroundQueue& fetch_queue() {
    static BackgroundQueue queue(kMostConnections, kMaxQueuedFetches);
    return queue;
}

bool is_weak(const std::string& etag) { return etag.starts_with("W/"); }

}  // namespace

// What the disk cache remembers of `url` from an earlier open, when it still holds the first bytes (block 0 whole, or
// the piece of it that an open kept): then opening it again asks whether it changed instead of fetching them, and
// `head` holds them.
std::optional<DiskCache::Remembered> remembered_with_head(RemoteContext& context, const std::string& url,
                                                          std::string& head) {
    // Filed under the URL without a password in it, as the blocks are: the record is a file on disk.
    auto known = context.disk().remembered(without_credentials(url));
    if (!known || known->size == 0 || (known->etag.empty() && known->last_modified.empty())) return std::nullopt;
    head.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kHeadBytes, known->size)));
    const auto first_block = static_cast<std::size_t>(std::min<std::uint64_t>(kBlockBytes, known->size));
    if (context.disk().read_part(known->object, 0, first_block, 0, head.data(), head.size(), true) ||
        context.disk().read_from_piece(known->object, 0, 0, head.data(), head.size()) == head.size()) {
        return known;
    }
    return std::nullopt;
}

std::shared_ptr<RemoteObject> RemoteObject::open(std::shared_ptr<RemoteContext> context, std::string name,
                                                 std::string url) {
    std::string cached_head;
    std::optional<DiskCache::Remembered> known = remembered_with_head(*context, url, cached_head);
    std::string head(kHeadBytes, '\0');
    Request request;
    request.url = url;
    request.ranged = true;
    request.first = 0;
    request.last = kHeadBytes - 1;
    request.into = {std::span<char>(head.data(), head.size())};
    request.capacity = head.size();
    if (known) {
        // Answered 304, without a body, when it is still what the cache holds.
        request.headers.push_back(known->etag.empty() ? "If-Modified-Since: " + known->last_modified
                                                      : "If-None-Match: " + known->etag);
    }
    Response response;
    try {
        response = context->http().send(request);
    } catch (const HttpError& error) {
        throw_problem(name, error.what());
    }
    const std::string answered_by = without_credentials(response.url);
    Identity identity;
    if (response.status == 304 && known) {
        // Unchanged: its identity and first bytes are the cache's.
        identity.size = known->size;
        head = std::move(cached_head);
        response.body_bytes = head.size();
        response.etag = known->etag;
        response.last_modified = known->last_modified;
    }
    switch (response.status) {
        case 304:
            if (!known) throw_problem(name, response.status_text() + " to a request that asked for no condition");
            break;
        case 206: {
            const auto total = response.total_size();
            if (!total) {
                throw_problem(name,
                              "the server answered a range request without the file's size (" + answered_by + ")");
            }
            identity.size = *total;
            if (response.body_bytes != std::min<std::uint64_t>(kHeadBytes, *total)) {
                throw_problem(name, "the server sent " + std::to_string(response.body_bytes) + " bytes for the first " +
                                        std::to_string(std::min<std::uint64_t>(kHeadBytes, *total)));
            }
            break;
        }
        case 200:
            // The whole file instead of a range: fine for a small file, which the head holds entirely.
            if (response.overflow) {
                throw_problem(name,
                              "the server does not serve byte ranges (it answered HTTP 200 with the whole file), "
                              "and tensorfs fetches only the ranges it reads");
            }
            identity.size = response.body_bytes;
            break;
        case 416:
            // No byte 0: an empty file.
            identity.size = response.total_size().value_or(0);
            if (identity.size != 0) {
                throw_problem(name, response.status_text() + " for its first bytes (" + answered_by + ")");
            }
            response.body_bytes = 0;
            break;
        case 404:
        case 410:
            // Not there; unless the server names another cause (S3's NoSuchBucket), which is not a missing file.
            if (response.error_code.empty() || response.error_code == "NoSuchKey") return nullptr;
            throw_problem(name, context->refusal(response));
        default:
            throw_problem(name, context->refusal(response));
    }
    head.resize(static_cast<std::size_t>(response.body_bytes));
    identity.etag = response.etag;
    identity.last_modified = response.last_modified;
    if (!identity.last_modified.empty()) {
        const time_t when = curl_getdate(identity.last_modified.c_str(), nullptr);
        if (when > 0) identity.modified.tv_sec = when;
    }
    const bool as_remembered = known && known->size == identity.size && known->etag == identity.etag &&
                               known->last_modified == identity.last_modified;
    auto object = std::make_shared<RemoteObject>(std::move(context), std::move(name), std::move(url),
                                                 std::move(identity), std::move(head));
    if (response.url != object->url_) object->location_ = response.url;
    if (as_remembered) object->remembered_folder_ = known->object;
    return object;
}

RemoteObject::RemoteObject(std::shared_ptr<RemoteContext> context, std::string name, std::string url,
                           Identity identity, std::string head)
    : SourceObject(std::move(name), identity.size, identity.modified),
      context_(std::move(context)),
      url_(std::move(url)),
      cache_address_(url_),
      identity_(std::move(identity)),
      serial_(context_->next_serial()),
      head_(std::move(head)),
      disk_state_(new std::atomic<std::uint8_t>[block_count()]()),
      fetched_here_(new std::atomic<bool>[block_count()]()) {}

RemoteObject::Deadline RemoteObject::read_deadline() const { return read_began() + context_->timeout(); }

RemoteObject::Deadline RemoteObject::fetch_deadline() const {
    return std::chrono::steady_clock::now() + context_->timeout();
}

void RemoteObject::read(std::uint64_t offset, std::size_t length, void* dst) const {
    if (length == 0) return;
    const Deadline deadline = read_deadline();
    if (offset > size() || length > size() - offset) throw IoError(name(), "read past the end of the file");
    auto* out = static_cast<char*>(dst);
    {
        // What the open fetched is not fetched again: a header longer than it is read from there on.
        const std::lock_guard lock(head_mutex_);
        if (offset < head_.size()) {
            const auto part = static_cast<std::size_t>(std::min<std::uint64_t>(length, head_.size() - offset));
            std::memcpy(out, head_.data() + offset, part);
            if (part == length) return;
            offset += part;
            length -= part;
            out += part;
        }
    }
    // From memory or the disk cache where they are (a second open of a cached model fetches nothing); else exactly
    // these bytes, kept for the reads that come for their blocks later. Written to the disk at once, not by the disk
    // cache's writer thread: parsers read while a mount starts, before its daemon forks, and a thread started then
    // would not be in the daemon.
    read_blocks(offset, length, out, true, deadline, DiskWrite::Now);
}

void RemoteObject::read_following(std::uint64_t offset, std::size_t length, void* dst) const {
    if (length == 0) return;
    if (offset > size() || length > size() - offset) throw IoError(name(), "read past the end of the file");
    const Deadline deadline = read_deadline();
    const std::uint64_t end = offset + length;
    const Follow followed = begin_read(offset, end, deadline);
    // A read that is not sequential (yet) fetches its whole block when it lies inside one (at most a block, and
    // the block lands in the disk cache), else exactly its bytes (never two blocks for one small read).
    const bool exact = followed.ahead == 0 && offset / kBlockBytes != (end - 1) / kBlockBytes;
    read_blocks(offset, length, static_cast<char*>(dst), exact, deadline, DiskWrite::Later);
}

RemoteObject::Follow RemoteObject::begin_read(std::uint64_t offset, std::uint64_t end, Deadline deadline) const {
    drop_head();
    const Follow followed = follow(offset, end);
    // No read-ahead for a read that waited its whole timeout for a worker already, nor while the server is silent.
    if (followed.ahead > 0 && std::chrono::steady_clock::now() < deadline && !context_->silent()) {
        read_ahead(followed);
    }
    return followed;
}

std::optional<SourceObject::FileSpan> RemoteObject::cached_span(std::uint64_t offset, std::size_t length) const {
    const std::uint64_t index = offset / kBlockBytes;
    const std::uint64_t from = offset - index * kBlockBytes;
    if (length == 0 || !cache_folder() || offset >= size()) return std::nullopt;
    length = std::min<std::size_t>(length, block_length(index) - from);
    // A block in memory (or on its way there) is served from there, as read_following would.
    if (context_->find(serial_, index).valid() || !on_disk(index)) return std::nullopt;
    const bool touch = disk_state_[index].load() != 1;
    std::optional<OpenFile> file =
        context_->disk().open_block(*cache_folder(), index, block_length(index), touch);
    if (!file) {
        disk_state_[index] = 2;  // evicted meanwhile
        return std::nullopt;
    }
    // Counted as a read only now that it is served from the file: otherwise read_following follows it.
    begin_read(offset, offset + length, read_deadline());
    if (disk_state_[index].exchange(1) != 1) read_ahead_on_disk(index);
    context_->counters().disk_cache_hits.add(1);
    return FileSpan{std::move(*file), from, length};
}

void RemoteObject::read_blocks(std::uint64_t offset, std::size_t length, char* out, bool exact,
                               Deadline deadline, DiskWrite disk_write) const {
    const std::uint64_t end = offset + length;
    for (std::uint64_t at = offset; at < end;) {
        const std::uint64_t index = at / kBlockBytes;
        const std::uint64_t from = at - index * kBlockBytes;
        const auto part = static_cast<std::size_t>(std::min<std::uint64_t>(end - at, block_length(index) - from));
        if (!serve_cached(index, from, part, out, deadline)) {
            // Bytes an earlier exact read (or the open) fetched are not fetched again by a random reader either.
            if (exact) {
                if (const std::size_t served = serve_piece(index, from, part, out)) {
                    at += served;
                    out += served;
                    continue;
                }
                // Marked as under way before looking for claims: a fetch of whole blocks that claims some of these
                // after the look waits for the pieces this keeps.
                std::optional<ExactFetches::UnderWay> under_way;
                under_way.emplace(exact_fetches_, at, end);
                if (context_->find(serial_, index).valid()) {
                    // Claimed meanwhile: served from that fetch (which waits for this mark, so it goes first), unless
                    // it failed.
                    under_way.reset();
                    if (serve_cached(index, from, part, out, deadline)) {
                        at += part;
                        out += part;
                        continue;
                    }
                    under_way.emplace(exact_fetches_, at, end);
                }
                // Exactly what is asked, up to the next cached block or kept piece (the read goes on from those).
                std::uint64_t upto = index + 1;
                while (upto * kBlockBytes < end && !on_disk(upto) && !context_->find(serial_, upto).valid()) ++upto;
                const std::uint64_t stop = stop_at_kept_piece(index, std::min(end, upto * kBlockBytes), at);
                const auto count = static_cast<std::size_t>(stop - at);
                fetch(at, count, out, deadline);
                context_->counters().disk_cache_misses.add(1);
                keep_fetched(at, count, out, disk_write);
                at += count;
                out += count;
                continue;
            }
            if (!exact) {
                // The blocks this read still needs, whole, in one request (unless someone fetches them already).
                const std::uint64_t last = (end - 1) / kBlockBytes;
                std::size_t bytes = 0;
                for (std::uint64_t i = index; i <= last; ++i) bytes += block_length(i);
                RemoteContext::Claim claim = context_->claim(serial_, index, last - index + 1, bytes);
                if (!claim.promises.empty()) fetch_blocks(claim, deadline);
                if (!serve_cached(index, from, part, out, deadline)) {
                    // Dropped from memory already (a budget smaller than one read): this part on its own.
                    fetch(at, part, out, deadline);
                }
            }
        }
        at += part;
        out += part;
    }
}

std::uint64_t RemoteObject::stop_at_kept_piece(std::uint64_t index, std::uint64_t end, std::uint64_t after) const {
    for (; index * kBlockBytes < end; ++index) {
        auto begin = context_->piece_begin(serial_, index);
        if (!begin && cache_folder()) begin = context_->disk().piece_begin(*cache_folder(), index);
        if (begin && index * kBlockBytes + *begin > after) return std::min(end, index * kBlockBytes + *begin);
    }
    return end;
}

bool RemoteObject::cached_before(std::uint64_t offset, std::uint64_t end) const {
    for (std::uint64_t index = offset / kBlockBytes; index * kBlockBytes < end; ++index) {
        if (fetched_here_[index].load(std::memory_order_relaxed) || !on_disk(index)) return false;
    }
    return true;
}

std::size_t RemoteObject::drop_head() const {
    if (head_dropped_.exchange(true)) return 0;
    std::string head;
    {
        const std::lock_guard lock(head_mutex_);
        head.swap(head_);
    }
    // Kept as the first bytes of block 0, so that they are not fetched again with it.
    if (head.empty() || on_disk(0) || context_->find(serial_, 0).valid()) return 0;
    keep_fetched(0, head.size(), head.data(), DiskWrite::Later);
    return head.size() == block_length(0) ? head.size() : 0;
}

RemoteObject::Follow RemoteObject::follow(std::uint64_t offset, std::uint64_t end) const {
    const std::uint64_t ceiling = context_->window_ceiling();
    // Bytes the disk cache held before this process fetched anything of them do not open the window: a reader of a
    // cached tensor reads on from the disk, and fetching the bytes after it, which it may never read, is not wanted.
    // Once its reads leave the cached bytes, the window opens as for any reader going on in order.
    const bool from_cache = cached_before(offset, end);
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
    if (stream->end + followed.ahead >= size()) context_->leave_progress(stream->bytes);
    return followed;
}

void RemoteObject::record_scheduled(std::uint64_t stream_end, std::uint64_t scheduled) const {
    const std::lock_guard lock(mutex_);
    for (Stream& stream : streams_) {
        if (stream.end == stream_end) stream.scheduled = std::max(stream.scheduled, scheduled);
    }
}

void RemoteObject::read_ahead(const Follow& followed) const {
    if (size() == 0) return;
    const std::uint64_t last = (std::min(size(), followed.stream_end + followed.ahead) - 1) / kBlockBytes;
    // Ranges of a share of the window each, so that the window is spread over the connections (a per-connection
    // cap is why servers are read with many), of 1 block to kRangeBytes.
    const std::uint64_t range_blocks = std::clamp<std::uint64_t>(
        context_->readahead_limit() / context_->max_connections() / kBlockBytes, 1, kRangeBytes / kBlockBytes);
    const std::uint64_t next_to_read = followed.stream_end / kBlockBytes;
    const std::uint64_t last_of_object = (size() - 1) / kBlockBytes;
    std::uint64_t index = followed.scheduled;
    while (index <= last) {
        if (on_disk(index) || context_->find(serial_, index).valid()) {
            ++index;
            continue;
        }
        std::uint64_t count = 1;
        std::size_t bytes = block_length(index);
        while (count < range_blocks && index + count <= last && !on_disk(index + count)) {
            bytes += block_length(index + count);
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
            std::weak_ptr<const RemoteObject> weak = weak_from_this();
            const bool queued = fetch_queue().offer([weak, claim, context = context_] {
                const auto self = weak.lock();
                if (self == nullptr) return context->give_up(*claim, nullptr);
                try {
                    self->fetch_blocks(*claim, self->fetch_deadline());
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

bool RemoteObject::serve_cached(std::uint64_t index, std::uint64_t from, std::size_t length, char* dst,
                                Deadline deadline) const {
    if (const auto found = context_->find(serial_, index); found.valid()) {
        // Not a second wait on a silent server, for a fetch that began before it fell silent.
        if (found.wait_for(std::chrono::seconds(0)) != std::future_status::ready) fail_if_silent();
        if (found.wait_until(deadline) == std::future_status::timeout) {
            context_->no_answer();
            throw IoError(name(), "no answer within " + timeout_text(context_->timeout()) +
                                      " (a fetch of these bytes is still under way)");
        }
        BlockPtr block;
        try {
            block = found.get();
        } catch (const IoError&) {
            // The fetch that had it failed: the caller fetches it again and meets the error itself.
        }
        if (block != nullptr) {
            std::memcpy(dst, block->bytes() + from, length);
            if (from + length == block->length) context_->consumed(serial_, index);
            return true;
        }
    }
    if (!on_disk(index)) return false;
    const bool touch = disk_state_[index].exchange(1) != 1;
    if (touch) read_ahead_on_disk(index);  // first: the disk then reads the next blocks beside this one
    if (context_->disk().read_part(*cache_folder(), index, block_length(index), static_cast<std::size_t>(from), dst,
                                   length, touch)) {
        context_->counters().disk_cache_hits.add(1);
        return true;
    }
    disk_state_[index] = 2;  // evicted meanwhile
    return false;
}

std::size_t RemoteObject::serve_piece(std::uint64_t index, std::uint64_t from, std::size_t length,
                                      char* dst) const {
    const auto begin = static_cast<std::size_t>(from);
    if (const std::size_t served = context_->read_piece(serial_, index, begin, length, dst)) return served;
    if (!cache_folder()) return 0;
    const std::size_t served = context_->disk().read_from_piece(*cache_folder(), index, begin, dst, length);
    if (served > 0) context_->counters().disk_cache_hits.add(1);
    return served;
}

void RemoteObject::read_ahead_on_disk(std::uint64_t index) const {
    // In order: the block before was read from the disk cache by this process too.
    if (index == 0 || disk_state_[index - 1].load() != 1) return;
    const std::uint64_t end = std::min(block_count(), index + 1 + kDiskReadAheadBlocks);
    std::uint64_t hinted = disk_read_ahead_end_.load();
    do {
        if (hinted >= end) return;
    } while (!disk_read_ahead_end_.compare_exchange_weak(hinted, end));
    for (std::uint64_t next = std::max(hinted, index + 1); next < end; ++next) {
        if (on_disk(next)) context_->disk().read_ahead(*cache_folder(), next);
    }
}

bool RemoteObject::on_disk(std::uint64_t index) const {
    if (!cache_folder()) return false;
    std::uint8_t state = disk_state_[index].load();
    // "Not there" is kept, except for a block this process fetched: it may be waiting in the disk cache's queue
    // (readers have it from memory meanwhile), and once written it must be found there when it leaves memory.
    const bool ask = state == 0 || (state == 2 && fetched_here_[index].load(std::memory_order_relaxed));
    if (!ask) return state != 2;
    const std::uint8_t found = context_->disk().has(*cache_folder(), index, block_length(index)) ? 3 : 2;
    disk_state_[index].compare_exchange_strong(state, found);
    return found != 2;
}

void RemoteObject::fetch_blocks(RemoteContext::Claim& claim, Deadline deadline) const {
    const std::uint64_t first = claim.first;
    const std::size_t count = claim.promises.size();
    try {
        // Checked before waiting for exact fetches too: a read-ahead queued before the server fell silent may start
        // only once the fetches that got no answer end, and must not keep readers waiting for a second timeout.
        fail_if_silent();
        exact_fetches_.wait_for(first * kBlockBytes, (first + count) * kBlockBytes, deadline);
        const auto buffers = new_block_buffers(first, count);
        // What exact reads kept of these blocks is not asked again: the rest comes in one request per gap.
        std::vector<std::span<char>> gap;
        std::uint64_t gap_offset = first * kBlockBytes;
        const auto fetch_gap = [&] {
            if (gap.empty()) return;
            std::size_t bytes = 0;
            for (const std::span<char> part : gap) bytes += part.size();
            fetch(gap_offset, std::move(gap), deadline);
            claim.fetched_bytes += bytes;
            gap.clear();
        };
        for (std::size_t i = 0; i < count; ++i) {
            const std::span<char> block(buffers[i].get(), block_length(first + i));
            const std::uint64_t block_offset = (first + i) * kBlockBytes;
            const auto piece = take_kept_piece(first + i, block.size());
            if (!piece) {
                if (gap.empty()) gap_offset = block_offset;
                gap.push_back(block);
                continue;
            }
            std::memcpy(block.data() + piece->begin, piece->bytes.data(), piece->bytes.size());
            if (piece->begin > 0) {
                if (gap.empty()) gap_offset = block_offset;
                gap.push_back(block.first(piece->begin));
            }
            fetch_gap();
            const std::size_t after = piece->begin + piece->bytes.size();
            if (after < block.size()) {
                gap_offset = block_offset + after;
                gap.push_back(block.subspan(after));
            }
        }
        fetch_gap();
        context_->counters().disk_cache_misses.add(count);
        hand_over(claim, buffers, DiskWrite::Later);
    } catch (const IoError&) {
        context_->give_up(claim, std::current_exception());
        throw;
    } catch (...) {
        context_->give_up(claim, nullptr);  // out of memory: whoever waits tries again itself
        throw;
    }
}

std::optional<Piece> RemoteObject::take_kept_piece(std::uint64_t index, std::size_t block_length) const {
    std::optional<Piece> in_memory = context_->take_piece(serial_, index);
    // Kept on disk by an exact read of an earlier mount or command; an exact read of this process that stopped where
    // that piece begins kept the bytes before it in memory.
    std::optional<Piece> on_disk;
    if (cache_folder()) on_disk = context_->disk().read_piece(*cache_folder(), index);
    Piece piece;
    if (in_memory && on_disk) {
        piece = merged(std::move(*in_memory), std::move(*on_disk));
    } else if (in_memory) {
        piece = std::move(*in_memory);
    } else if (on_disk) {
        piece = std::move(*on_disk);
    } else {
        return std::nullopt;
    }
    if (piece.bytes.empty() || piece.begin >= block_length || piece.bytes.size() > block_length - piece.begin) {
        return std::nullopt;  // not a piece of a block of this length
    }
    return piece;
}

std::vector<std::shared_ptr<char[]>> RemoteObject::new_block_buffers(std::uint64_t first, std::size_t count) const {
    std::vector<std::shared_ptr<char[]>> buffers;
    buffers.reserve(count);
    for (std::size_t i = 0; i < count; ++i) buffers.push_back(context_->block_buffer(block_length(first + i)));
    return buffers;
}

void RemoteObject::hand_over(RemoteContext::Claim& claim, const std::vector<std::shared_ptr<char[]>>& buffers,
                             DiskWrite disk_write) const {
    const std::uint64_t first = claim.first;
    const std::size_t count = claim.promises.size();
    std::vector<BlockPtr> blocks;
    blocks.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        auto block = std::make_shared<Block>();
        block->storage = buffers[i];
        block->length = block_length(first + i);
        block->serial = serial_;
        block->index = first + i;
        blocks.push_back(std::move(block));
    }
    const auto& folder = cache_folder();
    context_->deliver(claim, blocks, folder && disk_write == DiskWrite::Later);
    // Kept on disk once its readers have it: a disk that falls behind never holds a block back from them.
    if (folder) {
        if (disk_write == DiskWrite::Later) {
            context_->disk().write_later(*folder, first, blocks);
        } else {
            for (const BlockPtr& block : blocks) {
                context_->disk().write(*folder, block->index, block->bytes(), block->length);
            }
        }
        for (std::size_t i = 0; i < count; ++i) disk_state_[first + i] = 0;  // ask the disk when it left the memory
    }
}

void RemoteObject::keep_fetched(std::uint64_t offset, std::size_t length, const char* bytes,
                                DiskWrite disk_write) const {
    const std::uint64_t end = offset + length;
    for (std::uint64_t index = offset / kBlockBytes; index * kBlockBytes < end;) {
        const std::uint64_t begin = index * kBlockBytes;
        const std::uint64_t from = std::max(offset, begin);
        if (from != begin || end < begin + block_length(index)) {
            // Part of a block: kept as a piece, in memory and in the disk cache.
            const std::size_t part = static_cast<std::size_t>(std::min(end, begin + block_length(index)) - from);
            Piece piece{static_cast<std::size_t>(from - begin), std::string(bytes + (from - offset), part)};
            if (const auto& folder = cache_folder()) {
                if (disk_write == DiskWrite::Later) {
                    context_->disk().write_piece_later(*folder, index, std::make_shared<const Piece>(piece));
                } else {
                    context_->disk().write_piece(*folder, index, piece);
                }
            }
            context_->keep_piece(serial_, index, std::move(piece));
            ++index;
            continue;
        }
        // Whole blocks: kept in memory and on disk as if fetched whole (unless someone fetches them already).
        std::uint64_t count = 1;
        std::size_t run = block_length(index);
        while ((index + count) * kBlockBytes < end &&
               (index + count) * kBlockBytes + block_length(index + count) <= end) {
            run += block_length(index + count);
            ++count;
        }
        RemoteContext::Claim claim = context_->claim_fetched(serial_, index, count, run);
        const std::size_t claimed = claim.promises.size();
        if (claimed > 0) {
            try {
                const auto buffers = new_block_buffers(index, claimed);
                for (std::size_t i = 0; i < claimed; ++i) {
                    std::memcpy(buffers[i].get(), bytes + (begin - offset) + i * kBlockBytes, block_length(index + i));
                }
                hand_over(claim, buffers, disk_write);
            } catch (...) {
                context_->give_up(claim, nullptr);
                throw;
            }
        }
        index += std::max<std::size_t>(1, claimed);
    }
}

std::uint64_t RemoteObject::fill_cache(std::uint64_t offset, std::uint64_t length, const Progress& progress) const {
    if (length == 0 || offset >= size()) return 0;
    if (!cache_folder()) throw IoError(name(), "cannot be kept in the disk cache (it is off, or the server gives "
                                               "no ETag or Last-Modified)");
    // A file that the open fetched whole is fetched (and counted) here once.
    const std::size_t from_head = drop_head();
    const std::uint64_t first = offset / kBlockBytes;
    const std::uint64_t last = (std::min(size(), offset + length) - 1) / kBlockBytes;
    const std::uint64_t range_blocks = kRangeBytes / kBlockBytes;
    std::atomic<std::uint64_t> next{first};
    std::atomic<std::uint64_t> fetched{first == 0 ? from_head : 0};
    std::mutex error_mutex;
    std::exception_ptr error;
    // Each thread takes the next range of blocks, fetches what of it is not on disk in one request and goes on:
    // max_connections requests in flight, and the memory held bounded by them and the disk cache's queue.
    const auto fill = [&] {
        for (;;) {
            {
                const std::lock_guard lock(error_mutex);
                if (error) return;
            }
            const std::uint64_t start = next.fetch_add(range_blocks);
            if (start > last) return;
            const std::uint64_t end = std::min(last + 1, start + range_blocks);
            for (std::uint64_t index = start; index < end;) {
                if (on_disk(index)) {
                    if (progress) progress(block_length(index));
                    ++index;
                    continue;
                }
                std::uint64_t count = 1;
                std::size_t bytes = block_length(index);
                while (index + count < end && !on_disk(index + count)) bytes += block_length(index + count++);
                RemoteContext::Claim claim = context_->claim(serial_, index, count, bytes);
                if (claim.promises.empty()) {
                    // In memory or on its way already: whoever fetched it queues it for the disk.
                    if (progress) progress(block_length(index));
                    ++index;
                    continue;
                }
                const std::uint64_t claimed = claim.promises.size();
                std::size_t claimed_bytes = 0;
                for (std::uint64_t i = index; i < index + claimed; ++i) claimed_bytes += block_length(i);
                try {
                    fetch_blocks(claim, fetch_deadline());
                } catch (...) {
                    const std::lock_guard lock(error_mutex);
                    if (!error) error = std::current_exception();
                    return;
                }
                fetched += claimed_bytes;
                if (progress) progress(claimed_bytes);
                index += claimed;
            }
        }
    };
    std::vector<std::thread> threads;
    for (unsigned i = 1; i < context_->max_connections(); ++i) threads.emplace_back(fill);
    fill();
    for (auto& thread : threads) thread.join();
    context_->disk().wait_written();
    if (error) std::rethrow_exception(error);
    return fetched;
}

std::size_t RemoteObject::block_length(std::uint64_t index) const {
    return static_cast<std::size_t>(std::min<std::uint64_t>(kBlockBytes, size() - index * kBlockBytes));
}

std::optional<SourceObject::ChecksumCheck> RemoteObject::check_published_checksum() const {
    if (!checksum_lookup_) return std::nullopt;
    const std::optional<PublishedChecksum> published = checksum_lookup_(*this);
    if (!published) return std::nullopt;
    Digest digest(published->kind);
    std::vector<char> buffer(kRangeBytes);
    for (std::uint64_t at = 0; at < size(); at += buffer.size()) {
        const auto length = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), size() - at));
        read_following(at, length, buffer.data());
        digest.update(buffer.data(), length);
    }
    return ChecksumCheck{published->name, digest.hex() == published->hex};
}

void RemoteObject::evict_cached() const {
    if (!cache_folder()) return;
    context_->disk().remove_object(*cache_folder());
    for (std::uint64_t i = 0; i * kBlockBytes < size(); ++i) disk_state_[i] = 2;
}

const std::optional<std::filesystem::path>& RemoteObject::cache_folder() const {
    std::call_once(cache_folder_once_, [this] {
        // Without an ETag or a Last-Modified the object cannot be told from a newer version: never cached.
        if (identity_.etag.empty() && identity_.last_modified.empty()) return;
        const std::string identity =
            identity_.etag.empty() ? "last-modified " + identity_.last_modified : "etag " + identity_.etag;
        // The URL without a password in it: the key is a file on disk, and `tensorfs cache ls` shows it.
        cache_folder_ = context_->disk().object_folder(without_credentials(cache_address_) + "\n" + identity +
                                                       "\nsize " + std::to_string(size()) + "\nblock " +
                                                       std::to_string(kBlockBytes) + "\n");
        // So that the next open of the same URL can ask whether it changed (remembered_with_first_block).
        if (cache_folder_ && remembered_folder_ != cache_folder_) {
            context_->disk().remember(without_credentials(url_),
                                      {identity_.etag, identity_.last_modified, size(), *cache_folder_});
        }
    });
    return cache_folder_;
}

std::vector<std::string> RemoteObject::precondition_headers() const {
    // If-Match makes a server answer 412 when the object changed; If-Range makes one that ignores If-Match send
    // the whole new object instead of a range, which is refused as well (and cut short by the buffer's size).
    if (!identity_.etag.empty() && !is_weak(identity_.etag)) {
        return {"If-Match: " + identity_.etag, "If-Range: " + identity_.etag};
    }
    if (!identity_.last_modified.empty()) {
        return {"If-Unmodified-Since: " + identity_.last_modified, "If-Range: " + identity_.last_modified};
    }
    return {};
}

void RemoteObject::fail_if_silent() const {
    if (const auto ago = context_->silence()) {
        const auto seconds = std::chrono::duration_cast<std::chrono::milliseconds>(*ago).count() / 1000.0;
        char text[32];
        std::snprintf(text, sizeof text, "%.1f", seconds);
        throw IoError(name(), std::string("the server gave no answer ") + text +
                                  " s ago; reads fail at once until it answers, or for " +
                                  timeout_text(context_->timeout()) + " after that");
    }
}

void RemoteObject::fetch(std::uint64_t offset, std::size_t length, char* dst, Deadline deadline) const {
    fetch(offset, {std::span<char>(dst, length)}, deadline);
}

void RemoteObject::fetch(std::uint64_t offset, std::vector<std::span<char>> into, Deadline deadline) const {
    if (changed_) throw IoError(name(), "changed on the server since it was mounted; mount it again to read it");
    std::size_t length = 0;
    for (const std::span<char> buffer : into) length += buffer.size();
    const std::uint64_t first_block = offset / kBlockBytes;
    const std::uint64_t last_block = (offset + length - 1) / kBlockBytes;
    fail_if_silent();
    Request request;
    request.ranged = true;
    request.first = offset;
    request.last = offset + length - 1;
    request.headers = precondition_headers();
    request.into = std::move(into);
    request.capacity = length;
    request.deadline = deadline;
    request.on_answer = [context = context_.get()] { context->answered(); };
    for (int attempt = 0;; ++attempt) {
        {
            const std::lock_guard lock(mutex_);
            request.url = location_.empty() ? url_ : location_;
        }
        const bool redirected_before = request.url != url_;
        Response response;
        try {
            response = context_->http().send(request);
        } catch (const HttpError& error) {
            context_->no_answer();
            throw IoError(name(), error.what());
        }
        if (response.status == 206) {
            if (!identity_.etag.empty() && !response.etag.empty() && response.etag != identity_.etag) {
                changed("its ETag is now " + response.etag + ", was " + identity_.etag);
            }
            const auto total = response.total_size();
            if (total && *total != size()) {
                changed("its size is now " + std::to_string(*total) + ", was " + std::to_string(size()));
            }
            if (response.body_bytes != length) {
                throw IoError(name(), "the server sent " + std::to_string(response.body_bytes) +
                                          " bytes for a range of " + std::to_string(length));
            }
            if (response.url != url_) {
                const std::lock_guard lock(mutex_);
                location_ = response.url;
            }
            // Whole blocks (not a parser's or a random reader's few bytes) tell what a range of the read-ahead costs.
            if (length >= kBlockBytes) context_->measured(length, response.first_byte_us, response.total_us);
            for (std::uint64_t index = first_block; index <= last_block; ++index) fetched_here_[index] = true;
            return;
        }
        // 412: If-Match failed. 200: If-Range failed (the whole object came instead of a range). 416: it shrank.
        if (response.status == 412 || response.status == 200 || response.status == 416) {
            changed(response.status_text());
        }
        if (redirected_before && attempt == 0) {
            // Where the object redirected to may have expired (signed CDN addresses do): ask its own URL again.
            const std::lock_guard lock(mutex_);
            location_.clear();
            continue;
        }
        if (response.status == 404 || response.status == 410) changed("no longer there: " + response.status_text());
        throw IoError(name(), response.status_text());
    }
}

void RemoteObject::changed(const std::string& how) const {
    const std::string what = "changed on the server since it was mounted (" + how + ")";
    if (!changed_.exchange(true)) {
        context_->counters().objects_changed.add(1);
        log_warning(name() + ": " + what + "; its reads fail with EIO until it is mounted again");
    }
    throw IoError(name(), what);
}

}  // namespace tensorfs::remote
