// The blocks of one remote object in the disk cache (disk_cache.hpp), as the object knows them: its folder there,
// which blocks the cache holds (asked of the disk once, then remembered), which of them this process fetched, and
// reads of them, straight from their files into the reader's buffer (a block is never staged whole).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "block.hpp"
#include "fetch_locks.hpp"
#include "object_opening.hpp"
#include "remote_context.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::remote {

class DiskBlocks {
public:
    // The blocks of the object at `url` opened with `identity` (both kept by reference: the object's);
    // `remembered_folder` as Opened has it.
    DiskBlocks(RemoteContext& context, const std::string& url, const Identity& identity,
               std::optional<std::filesystem::path> remembered_folder);

    // The URL the disk cache files the blocks under (RemoteObject::set_cache_address); the object's by default.
    void set_cache_address(std::string url) { cache_address_ = std::move(url); }

    // The disk cache's folder for this object; nullopt when it is not cached.
    const std::optional<std::filesystem::path>& folder() const;

    // Whether block `index` is in the disk cache (asked of the disk once, then remembered).
    bool has(std::uint64_t index) const;
    // Copies `parts` of block `index` from its file; false when it is not there.
    bool read(std::uint64_t index, std::span<const BlockPart> parts) const;

    // This process's turn to fetch bytes of block `index`, when processes that share the disk cache want it at once
    // (fetch_locks.hpp): its fetch lock, held until what is fetched is in the disk cache (null without a disk cache:
    // every process fetches then). nullopt when it is not this process's turn: another process holds the lock, or
    // the block is in the disk cache now (asked of the disk again once the lock is taken; has() says so then).
    std::optional<HeldLock> take_turn(std::uint64_t index) const;
    // Waits while another process fetches bytes of block `index` (holds its lock), until `deadline`. Returns whether
    // the block may have come meanwhile (one did, or it is in the disk cache now): the disk is asked about it again.
    // Throws IoError naming `name` when one still does at `deadline`.
    bool wait_for_other_fetch(std::uint64_t index, std::chrono::steady_clock::time_point deadline,
                              const std::string& name) const;
    // Block `index`'s file, open for reading, checked to be there whole; nullopt when it is not (evicted meanwhile).
    std::optional<OpenFile> open(std::uint64_t index) const;
    // Marks block `index` as read from the disk cache by this process; returns true at its first read (which touches
    // the file: eviction goes by least recent use).
    bool mark_read(std::uint64_t index) const;

    // Some bytes of blocks [first, last] were fetched by this process (so they were not all in the disk cache before).
    void fetched(std::uint64_t first, std::uint64_t last) const;
    // Whether every block of bytes [offset, end) was in the disk cache before this process fetched any of it.
    bool cached_before(std::uint64_t offset, std::uint64_t end) const;
    // Blocks [first, first + count) were handed to the disk cache: the disk is asked about them again once they
    // have left the memory.
    void handed_over(std::uint64_t first, std::uint64_t count) const;

    // Drops the object's blocks from the disk cache (a checksum that did not match).
    void evict() const;

private:
    // Called at the first read of block `index` from the disk cache: when the reader goes in order, the kernel is
    // asked to read the next blocks' files ahead of it.
    void read_ahead(std::uint64_t index) const;

    RemoteContext& context_;
    const std::string& url_;
    const Identity& identity_;
    std::string cache_address_;
    // The folder the disk cache remembered for this URL, when it was opened as remembered (nothing to record then).
    const std::optional<std::filesystem::path> remembered_folder_;
    mutable std::once_flag folder_once_;
    mutable std::optional<std::filesystem::path> folder_;
    // Per block: 0 not known, 1 in the disk cache (and marked used by this process), 2 not there when last asked,
    // 3 in the disk cache.
    const std::unique_ptr<std::atomic<std::uint8_t>[]> state_;
    // Blocks before this one were asked of the kernel's read-ahead (DiskCache::read_ahead) for an in-order reader.
    mutable std::atomic<std::uint64_t> read_ahead_end_{0};
    // Per block: some of its bytes were fetched by this process (so it was not all in the disk cache before).
    const std::unique_ptr<std::atomic<bool>[]> fetched_here_;
};

}  // namespace tensorfs::remote
