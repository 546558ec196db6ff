#include "remote_object.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "tensorfs/errors.hpp"

namespace tensorfs::remote {

std::shared_ptr<RemoteObject> RemoteObject::open(std::shared_ptr<RemoteContext> context, std::string name,
                                                 std::string url) {
    std::optional<Opened> opened = ask_first_bytes(*context, name, url);
    if (!opened) return nullptr;
    return std::make_shared<RemoteObject>(std::move(context), std::move(name), std::move(url), std::move(*opened));
}

RemoteObject::RemoteObject(std::shared_ptr<RemoteContext> context, std::string name, std::string url, Opened opened)
    : SourceObject(std::move(name), opened.identity.size, opened.identity.modified),
      context_(std::move(context)),
      url_(std::move(url)),
      identity_(std::move(opened.identity)),
      serial_(context_->next_serial()),
      head_(std::move(opened.head)),
      requests_(*context_, *this, url_, identity_, std::move(opened.location)),
      disk_(*context_, url_, identity_, std::move(opened.remembered_folder)),
      kept_(*context_, *this, serial_, disk_),
      fetches_(*context_, *this, serial_, requests_, disk_, kept_),
      read_ahead_(context_, *this, serial_, disk_) {}

void RemoteObject::read(std::uint64_t offset, std::size_t length, void* dst) const {
    if (length == 0) return;
    const Deadline deadline = read_deadline(*context_);
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
    fetches_.read(offset, length, out, true, deadline, DiskWrite::Now);
}

void RemoteObject::read_following(std::uint64_t offset, std::size_t length, void* dst) const {
    if (length == 0) return;
    if (offset > size() || length > size() - offset) throw IoError(name(), "read past the end of the file");
    const Deadline deadline = read_deadline(*context_);
    const std::uint64_t end = offset + length;
    const ReadAhead::Follow followed = begin_read(offset, end, deadline);
    // A read that is not sequential (yet) fetches its whole block when it lies inside one (at most a block, and
    // the block lands in the disk cache), else exactly its bytes (never two blocks for one small read).
    const bool exact = followed.ahead == 0 && offset / kBlockBytes != (end - 1) / kBlockBytes;
    fetches_.read(offset, length, static_cast<char*>(dst), exact, deadline, DiskWrite::Later);
}

void RemoteObject::read_runs(std::span<const Run> runs) const {
    for (const Run& run : runs) {
        if (run.offset > size() || run.length > size() - run.offset) {
            throw IoError(name(), "read past the end of the file");
        }
    }
    for (std::size_t first = 0; first < runs.size();) {
        // Runs whose gaps are shorter than a block: every block from the first run's to the last one's holds some of
        // them, so those blocks are fetched whole (a range for many runs) rather than a range for each run.
        std::size_t end = first + 1;
        const auto near_the_last = [&] {
            return runs[end].offset < runs[end - 1].offset + runs[end - 1].length + kBlockBytes;
        };
        while (end < runs.size() && near_the_last()) ++end;
        if (end == first + 1) {
            read(runs[first].offset, runs[first].length, runs[first].dst);
        } else {
            const std::span<const Run> near = runs.subspan(first, end - first);
            const std::uint64_t begin = near.front().offset / kBlockBytes * kBlockBytes;
            const std::uint64_t stop = std::min(size(), (near.back().offset + near.back().length + kBlockBytes - 1) /
                                                            kBlockBytes * kBlockBytes);
            const Deadline deadline = read_deadline(*context_);
            begin_read(begin, stop, deadline);
            fetches_.gather(near, deadline);
        }
        first = end;
    }
}

ReadAhead::Follow RemoteObject::begin_read(std::uint64_t offset, std::uint64_t end, Deadline deadline) const {
    drop_head();
    const ReadAhead::Follow followed = read_ahead_.follow(offset, end);
    // No read-ahead for a read that waited its whole timeout for a worker already, nor while the server is silent.
    if (followed.ahead > 0 && std::chrono::steady_clock::now() < deadline && !context_->silent()) {
        // Its fetches hold this object while they run, through its fetcher.
        read_ahead_.fetch_ahead(followed, std::shared_ptr<const BlockFetches>(shared_from_this(), &fetches_));
    }
    return followed;
}

std::size_t RemoteObject::drop_head() const {
    if (head_dropped_.exchange(true)) return 0;
    std::string head;
    {
        const std::lock_guard lock(head_mutex_);
        head.swap(head_);
    }
    // Kept as the first bytes of block 0, so that they are not fetched again with it.
    if (head.empty() || disk_.has(0) || kept_.in_memory(0)) return 0;
    kept_.keep_fetched(0, head.size(), head.data(), DiskWrite::Later);
    return head.size() == block_length(size(), 0) ? head.size() : 0;
}

std::optional<SourceObject::FileSpan> RemoteObject::cached_span(std::uint64_t offset, std::size_t length) const {
    const std::uint64_t index = offset / kBlockBytes;
    const std::uint64_t from = offset - index * kBlockBytes;
    if (length == 0 || !disk_.folder() || offset >= size()) return std::nullopt;
    length = std::min<std::size_t>(length, block_length(size(), index) - from);
    // A block in memory (or on its way there) is served from there, as read_following would.
    if (kept_.in_memory(index) || !disk_.has(index)) return std::nullopt;
    std::optional<OpenFile> file = disk_.open(index);
    if (!file) return std::nullopt;
    // Counted as a read only now that it is served from the file: otherwise read_following follows it.
    begin_read(offset, offset + length, read_deadline(*context_));
    disk_.mark_read(index);
    context_->counters().disk_cache_hits.add(1);
    return FileSpan{std::move(*file), from, length};
}

std::uint64_t RemoteObject::fill_cache(std::uint64_t offset, std::uint64_t length, const Progress& progress) const {
    if (length == 0 || offset >= size()) return 0;
    if (!disk_.folder()) throw IoError(name(), "cannot be kept in the disk cache (it is off, or the server gives "
                                               "no ETag or Last-Modified)");
    // A file that the open fetched whole is fetched (and counted) here once.
    const std::size_t from_head = drop_head();
    const std::uint64_t first = offset / kBlockBytes;
    const std::uint64_t last = (std::min(size(), offset + length) - 1) / kBlockBytes;
    return (first == 0 ? from_head : 0) + fetches_.fetch_to_disk(first, last, progress);
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

void RemoteObject::evict_cached() const { disk_.evict(); }

}  // namespace tensorfs::remote
