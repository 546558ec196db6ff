#include "block_fetches.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tensorfs/errors.hpp"

namespace tensorfs::remote {

BlockFetches::BlockFetches(RemoteContext& context, const SourceObject& object, std::uint64_t serial,
                           const RangeRequests& requests, const DiskBlocks& disk, const KeptBlocks& kept)
    : context_(context), object_(object), serial_(serial), requests_(requests), disk_(disk), kept_(kept) {}

void BlockFetches::read(std::uint64_t offset, std::size_t length, char* out, bool exact, Deadline deadline,
                        DiskWrite disk_write) const {
    const std::uint64_t size = object_.size();
    const std::uint64_t end = offset + length;
    for (std::uint64_t at = offset; at < end;) {
        std::size_t done = 0;
        if (exact) {
            done = read_exactly(at, end, out, deadline, disk_write);
        } else {
            const std::uint64_t index = at / kBlockBytes;
            const std::uint64_t from = at - index * kBlockBytes;
            done = static_cast<std::size_t>(std::min<std::uint64_t>(end - at, block_length(size, index) - from));
            const BlockPart part{static_cast<std::size_t>(from), done, out};
            read_whole_blocks(index, (end - 1) / kBlockBytes, {&part, 1}, deadline);
        }
        at += done;
        out += done;
    }
}

std::size_t BlockFetches::read_exactly(std::uint64_t at, std::uint64_t end, char* out, Deadline deadline,
                                       DiskWrite disk_write) const {
    const std::uint64_t index = at / kBlockBytes;
    const auto from = static_cast<std::size_t>(at - index * kBlockBytes);
    const auto part = static_cast<std::size_t>(std::min<std::uint64_t>(end - at, block_length(object_.size(), index) -
                                                                                     from));
    const BlockPart wanted{from, part, out};
    if (kept_.serve(index, {&wanted, 1}, deadline)) return part;
    // Taken before looking for pieces: a piece that another process kept of the block is on disk once it lets go.
    std::optional<HeldLock> turn = disk_.take_turn(index);
    if (!turn) {
        disk_.wait_for_other_fetch(index, deadline, object_.name());
        return 0;
    }
    // Bytes an earlier exact read (or the open) fetched are not fetched again by a random reader either.
    if (const std::size_t served = kept_.serve_piece(index, from, part, out)) return served;
    // Marked as under way before looking for claims: a fetch of whole blocks that claims some of these after the
    // look waits for the pieces this keeps.
    std::optional<ExactFetches::UnderWay> under_way;
    under_way.emplace(exact_fetches_, at, end);
    if (kept_.in_memory(index)) {
        // Claimed meanwhile: served from that fetch (which waits for this mark, so it goes first), unless it failed.
        under_way.reset();
        if (kept_.serve(index, {&wanted, 1}, deadline)) return part;
        under_way.emplace(exact_fetches_, at, end);
    }
    // Exactly what is asked, up to the next cached block, kept piece or block that another process fetches (the
    // read goes on from those).
    std::vector<HeldLock> locks{std::move(*turn)};
    std::uint64_t upto = index + 1;
    while (upto * kBlockBytes < end && !disk_.has(upto) && !kept_.in_memory(upto)) {
        std::optional<HeldLock> next = disk_.take_turn(upto);
        if (!next) break;
        locks.push_back(std::move(*next));
        ++upto;
    }
    const std::uint64_t stop = kept_.stop_at_piece(index, std::min(end, upto * kBlockBytes), at);
    const auto count = static_cast<std::size_t>(stop - at);
    fetch(at, {std::span<char>(out, count)}, deadline);
    context_.counters().disk_cache_misses.add(1);
    kept_.keep_fetched(at, count, out, disk_write, locks);
    return count;
}

void BlockFetches::read_whole_blocks(std::uint64_t index, std::uint64_t last, std::span<const BlockPart> parts,
                                     Deadline deadline) const {
    const std::uint64_t size = object_.size();
    for (;;) {
        if (kept_.serve(index, parts, deadline)) return;
        // The blocks this read still needs, whole, in one request (unless someone fetches them already).
        std::size_t bytes = 0;
        for (std::uint64_t i = index; i <= last; ++i) bytes += block_length(size, i);
        RemoteContext::Claim claim = context_.claim(serial_, index, last - index + 1, bytes);
        if (!claim.promises.empty()) fetch_claimed(claim, deadline);
        if (kept_.serve(index, parts, deadline)) return;
        // Another process fetches it: read from the disk cache once it is there (or fetched here, when that process
        // lets go of it without it).
        if (disk_.wait_for_other_fetch(index, deadline, object_.name())) continue;
        // Dropped from memory already (a budget smaller than one read): these parts on their own.
        for (const BlockPart& part : parts) {
            fetch(index * kBlockBytes + part.from, {std::span<char>(part.out, part.length)}, deadline);
        }
        return;
    }
}

void BlockFetches::gather(std::span<const SourceObject::Run> runs, Deadline deadline) const {
    if (runs.empty()) return;
    const std::uint64_t size = object_.size();
    const std::uint64_t last = (runs.back().offset + runs.back().length - 1) / kBlockBytes;
    // A reader's claim asks for a range of kRangeBytes at most, as the read-ahead does.
    const std::uint64_t range_blocks = kRangeBytes / kBlockBytes;
    std::vector<BlockPart> parts;
    std::size_t next = 0;     // the first run not read whole yet
    std::uint64_t taken = 0;  // bytes of it in the blocks before
    for (std::uint64_t index = runs.front().offset / kBlockBytes; index <= last; ++index) {
        const std::uint64_t begin = index * kBlockBytes;
        const std::uint64_t end = begin + block_length(size, index);
        parts.clear();
        while (next < runs.size() && runs[next].offset + taken < end) {
            const SourceObject::Run& run = runs[next];
            const std::uint64_t at = run.offset + taken;
            const auto length = static_cast<std::size_t>(std::min<std::uint64_t>(run.offset + run.length, end) - at);
            char* const out = static_cast<char*>(run.dst) + taken;
            parts.push_back(BlockPart{static_cast<std::size_t>(at - begin), length, out});
            taken += length;
            if (taken < run.length) break;  // it goes on in the next block
            ++next;
            taken = 0;
        }
        if (!parts.empty()) read_whole_blocks(index, std::min(last, index + range_blocks - 1), parts, deadline);
    }
}

std::size_t BlockFetches::fetch_claimed(RemoteContext::Claim& claim, Deadline deadline,
                                       std::vector<std::uint64_t>* left) const {
    const std::uint64_t first = claim.first;
    const std::size_t count = claim.promises.size();
    try {
        // Checked before waiting for exact fetches too: a read-ahead queued before the server fell silent may start
        // only once the fetches that got no answer end, and must not keep readers waiting for a second timeout.
        fail_if_silent(context_, object_.name());
        exact_fetches_.wait_for(first * kBlockBytes, (first + count) * kBlockBytes, deadline);
        // The blocks that are this process's to fetch have a buffer (and their fetch lock until they are on disk).
        std::vector<std::shared_ptr<char[]>> buffers(count);
        std::vector<HeldLock> locks(count);
        std::size_t fetched = 0;
        for (std::size_t i = 0; i < count; ++i) {
            if (std::optional<HeldLock> turn = disk_.take_turn(first + i)) {
                locks[i] = std::move(*turn);
                buffers[i] = kept_.new_buffer(first + i);
                fetched += block_length(object_.size(), first + i);
            } else if (left != nullptr && !disk_.has(first + i)) {
                left->push_back(first + i);
            }
        }
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
        std::size_t blocks = 0;
        for (std::size_t i = 0; i < count; ++i) {
            if (buffers[i] == nullptr) {
                fetch_gap();
                continue;
            }
            ++blocks;
            const std::span<char> block(buffers[i].get(), block_length(object_.size(), first + i));
            const std::uint64_t block_offset = (first + i) * kBlockBytes;
            const auto piece = kept_.take_piece(first + i);
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
        context_.counters().disk_cache_misses.add(blocks);
        kept_.hand_over(claim, buffers, locks, DiskWrite::Later);
        return fetched;
    } catch (const IoError&) {
        context_.give_up(claim, std::current_exception());
        throw;
    } catch (...) {
        context_.give_up(claim, nullptr);  // out of memory: whoever waits tries again itself
        throw;
    }
}

std::uint64_t BlockFetches::fetch_to_disk(std::uint64_t first, std::uint64_t last,
                                          const SourceObject::Progress& progress) const {
    const std::uint64_t size = object_.size();
    const std::uint64_t range_blocks = kRangeBytes / kBlockBytes;
    std::atomic<std::uint64_t> next{first};
    std::atomic<std::uint64_t> fetched{0};
    std::mutex error_mutex;  // also of `left`
    std::exception_ptr error;
    std::vector<std::uint64_t> left;  // blocks another process was fetching
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
                if (disk_.has(index)) {
                    if (progress) progress(block_length(size, index));
                    ++index;
                    continue;
                }
                std::uint64_t count = 1;
                std::size_t bytes = block_length(size, index);
                while (index + count < end && !disk_.has(index + count)) bytes += block_length(size, index + count++);
                RemoteContext::Claim claim = context_.claim(serial_, index, count, bytes);
                if (claim.promises.empty()) {
                    // In memory or on its way already: whoever fetched it queues it for the disk.
                    if (progress) progress(block_length(size, index));
                    ++index;
                    continue;
                }
                const std::uint64_t claimed = claim.promises.size();
                std::size_t claimed_bytes = 0;
                for (std::uint64_t i = index; i < index + claimed; ++i) claimed_bytes += block_length(size, i);
                std::vector<std::uint64_t> others;
                try {
                    fetched += fetch_claimed(claim, fetch_deadline(context_), &others);
                } catch (...) {
                    const std::lock_guard lock(error_mutex);
                    if (!error) error = std::current_exception();
                    return;
                }
                if (!others.empty()) {
                    const std::lock_guard lock(error_mutex);
                    left.insert(left.end(), others.begin(), others.end());
                }
                if (progress) progress(claimed_bytes);
                index += claimed;
            }
        }
    };
    std::vector<std::thread> threads;
    for (unsigned i = 1; i < context_.max_connections(); ++i) threads.emplace_back(fill);
    fill();
    for (auto& thread : threads) thread.join();
    context_.disk().wait_written();
    if (error) std::rethrow_exception(error);
    // The blocks that another process was fetching: waited for until they are in the disk cache, or fetched here when
    // that process let go of them without putting them there.
    for (const std::uint64_t index : left) {
        disk_.wait_for_other_fetch(index, fetch_deadline(context_), object_.name());
        if (disk_.has(index)) continue;
        RemoteContext::Claim claim = context_.claim(serial_, index, 1, block_length(size, index));
        if (!claim.promises.empty()) fetched += fetch_claimed(claim, fetch_deadline(context_));
    }
    context_.disk().wait_written();
    return fetched;
}

void BlockFetches::fetch(std::uint64_t offset, std::vector<std::span<char>> into, Deadline deadline) const {
    std::size_t length = 0;
    for (const std::span<char> buffer : into) length += buffer.size();
    requests_.fetch(offset, std::move(into), deadline);
    disk_.fetched(offset / kBlockBytes, (offset + length - 1) / kBlockBytes);
}

}  // namespace tensorfs::remote
