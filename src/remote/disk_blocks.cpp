#include "disk_blocks.hpp"

#include <algorithm>

#include "block.hpp"
#include "tensorfs/errors.hpp"
#include "url.hpp"

namespace tensorfs::remote {
namespace {

// How far ahead of an in-order reader the disk cache's next blocks are read (a node that restarted reads its cache
// from the disk: each block file's read waited on the disk alone, one after another).
constexpr std::uint64_t kDiskReadAheadBlocks = 16;

}  // namespace

DiskBlocks::DiskBlocks(RemoteContext& context, const std::string& url, const Identity& identity,
                       std::optional<std::filesystem::path> remembered_folder)
    : context_(context),
      url_(url),
      identity_(identity),
      cache_address_(url),
      remembered_folder_(std::move(remembered_folder)),
      state_(new std::atomic<std::uint8_t>[block_count(identity.size)]()),
      fetched_here_(new std::atomic<bool>[block_count(identity.size)]()) {}

const std::optional<std::filesystem::path>& DiskBlocks::folder() const {
    std::call_once(folder_once_, [this] {
        // Without an ETag or a Last-Modified the object cannot be told from a newer version: never cached.
        if (identity_.etag.empty() && identity_.last_modified.empty()) return;
        const std::string identity =
            identity_.etag.empty() ? "last-modified " + identity_.last_modified : "etag " + identity_.etag;
        // The URL without a password in it: the key is a file on disk, and `tensorfs cache ls` shows it.
        folder_ = context_.disk().object_folder(without_credentials(cache_address_) + "\n" + identity + "\nsize " +
                                                std::to_string(identity_.size) + "\nblock " +
                                                std::to_string(kBlockBytes) + "\n");
        // So that the next open of the same URL can ask whether it changed (object_opening.hpp).
        if (folder_ && remembered_folder_ != folder_) {
            context_.disk().remember(without_credentials(url_),
                                     {identity_.etag, identity_.last_modified, identity_.size, *folder_});
        }
    });
    return folder_;
}

bool DiskBlocks::has(std::uint64_t index) const {
    if (!folder()) return false;
    std::uint8_t state = state_[index].load();
    // "Not there" is kept, except for a block this process fetched: it may be waiting in the disk cache's queue
    // (readers have it from memory meanwhile), and once written it must be found there when it leaves memory.
    const bool ask = state == 0 || (state == 2 && fetched_here_[index].load(std::memory_order_relaxed));
    if (!ask) return state != 2;
    const std::uint8_t found = context_.disk().has(*folder(), index, block_length(identity_.size, index)) ? 3 : 2;
    state_[index].compare_exchange_strong(state, found);
    return found != 2;
}

bool DiskBlocks::read(std::uint64_t index, std::span<const BlockPart> parts) const {
    if (!has(index)) return false;
    const bool touch = mark_read(index);
    if (context_.disk().read_parts(*folder(), index, block_length(identity_.size, index), parts, touch)) {
        context_.counters().disk_cache_hits.add(1);
        return true;
    }
    state_[index] = 2;  // evicted meanwhile
    return false;
}

std::optional<HeldLock> DiskBlocks::take_turn(std::uint64_t index) const {
    if (!folder()) return HeldLock{};
    HeldLock lock = context_.disk().fetch_locks().try_lock(*folder(), index);
    if (lock == nullptr) return std::nullopt;
    // Another process may have fetched it since this one last asked, and let go of its lock.
    std::uint8_t state = state_[index].load();
    if (state == 2) state_[index].compare_exchange_strong(state, 0);
    if (has(index)) return std::nullopt;
    return lock;
}

bool DiskBlocks::wait_for_other_fetch(std::uint64_t index, std::chrono::steady_clock::time_point deadline,
                                      const std::string& name) const {
    if (!folder()) return false;
    FetchLocks& locks = context_.disk().fetch_locks();
    const bool other = locks.held_elsewhere(*folder(), index);
    if (other && !locks.wait_while_held_elsewhere(*folder(), index, deadline)) {
        throw IoError(name,
                      "no answer within " + timeout_text(context_.timeout()) +
                          " (another process's fetch of these bytes is still under way)",
                      ErrorKind::TimedOut);
    }
    std::uint8_t state = state_[index].load();
    if (state == 2) state_[index].compare_exchange_strong(state, 0);
    return other || has(index);
}

std::optional<OpenFile> DiskBlocks::open(std::uint64_t index) const {
    const bool touch = state_[index].load() != 1;
    std::optional<OpenFile> file =
        context_.disk().open_block(*folder(), index, block_length(identity_.size, index), touch);
    if (!file) state_[index] = 2;  // evicted meanwhile
    return file;
}

bool DiskBlocks::mark_read(std::uint64_t index) const {
    const bool first = state_[index].exchange(1) != 1;
    if (first) read_ahead(index);  // first: the disk then reads the next blocks beside this one
    return first;
}

void DiskBlocks::read_ahead(std::uint64_t index) const {
    // In order: the block before was read from the disk cache by this process too.
    if (index == 0 || state_[index - 1].load() != 1) return;
    const std::uint64_t end = std::min(block_count(identity_.size), index + 1 + kDiskReadAheadBlocks);
    std::uint64_t hinted = read_ahead_end_.load();
    do {
        if (hinted >= end) return;
    } while (!read_ahead_end_.compare_exchange_weak(hinted, end));
    for (std::uint64_t next = std::max(hinted, index + 1); next < end; ++next) {
        if (has(next)) context_.disk().read_ahead(*folder(), next);
    }
}

void DiskBlocks::fetched(std::uint64_t first, std::uint64_t last) const {
    for (std::uint64_t index = first; index <= last; ++index) fetched_here_[index] = true;
}

bool DiskBlocks::cached_before(std::uint64_t offset, std::uint64_t end) const {
    for (std::uint64_t index = offset / kBlockBytes; index * kBlockBytes < end; ++index) {
        if (fetched_here_[index].load(std::memory_order_relaxed) || !has(index)) return false;
    }
    return true;
}

void DiskBlocks::handed_over(std::uint64_t first, std::uint64_t count) const {
    for (std::uint64_t i = 0; i < count; ++i) state_[first + i] = 0;  // ask the disk when it left the memory
}

void DiskBlocks::evict() const {
    if (!folder()) return;
    context_.disk().remove_object(*folder());
    for (std::uint64_t i = 0; i * kBlockBytes < identity_.size; ++i) state_[i] = 2;
}

}  // namespace tensorfs::remote
