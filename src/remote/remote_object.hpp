// One file on a web server, the Hub or an object store, read by HTTP range requests. A SourceObject made of parts
// that each do one job:
//   - object_opening.hpp: opening it, one request for its first bytes that records its size and identity;
//   - range_requests.hpp: its range requests, each made only on the object that was opened;
//   - disk_blocks.hpp, kept_blocks.hpp: its blocks where they are kept once fetched: in the disk cache, in memory,
//     in pieces;
//   - block_fetches.hpp: reads block by block, from where the bytes are kept, else fetched (exactly, or whole
//     blocks);
//   - read_ahead.hpp: following its readers' streams and fetching a window ahead of them.
//
// Header reads (read()) fetch exactly the ranges the parsers ask for past the first bytes, and keep them (written to
// the disk cache at once: they come before a daemon forks). Reads of tensors (read_following()) follow the reader,
// not the tensor:
//   - a read that continues none of the object's recent streams fetches its block when it lies inside one, else
//     exactly its own bytes (when they are not in memory or in the disk cache): a random touch costs 1 MiB at most;
//   - a read that continues a stream (starts near where one ended) fetches whole blocks, and the read-ahead keeps
//     the blocks up to a window ahead fetched or on their way;
//   - blocks in the disk cache are read straight from their file into the reader's buffer, never staged whole.
// A read waits for the network until its deadline (read_deadline.hpp); an object that changed on the server fails
// the read with IoError, never serving old and new bytes mixed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "block_fetches.hpp"
#include "digest.hpp"
#include "disk_blocks.hpp"
#include "kept_blocks.hpp"
#include "object_opening.hpp"
#include "range_requests.hpp"
#include "read_ahead.hpp"
#include "read_deadline.hpp"
#include "remote_context.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::remote {

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
    // 410). Throws SourceError naming it when it cannot be reached, refuses the credentials or cannot serve
    // byte ranges.
    static std::shared_ptr<RemoteObject> open(std::shared_ptr<RemoteContext> context, std::string name,
                                              std::string url);

    void read(std::uint64_t offset, std::size_t length, void* dst) const override;
    void read_following(std::uint64_t offset, std::size_t length, void* dst) const override;
    // Runs less than a block apart are read from whole blocks, as a stream (the read-ahead follows it), each block
    // once; a run on its own is read as read() does.
    void read_runs(std::span<const Run> runs) const override;

    // What its first request brought; public for the constructor's sake (open() is the way to make one).
    RemoteObject(std::shared_ptr<RemoteContext> context, std::string name, std::string url, Opened opened);

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
    void set_cache_address(std::string url) { disk_.set_cache_address(std::move(url)); }

    const std::string& url() const { return url_; }
    const std::string& etag() const { return identity_.etag; }

private:
    // What every read of a reader's bytes does first: lets the head go, follows the reader's stream and starts the
    // read-ahead it calls for (unless the read is late already or the server silent). Returns what follow() learned.
    ReadAhead::Follow begin_read(std::uint64_t offset, std::uint64_t end, Deadline deadline) const;
    // Lets the first bytes fetched at open go, as a piece of block 0 (see head_); returns their count when they were
    // the whole block 0 (a small file), else 0.
    std::size_t drop_head() const;

    std::shared_ptr<RemoteContext> context_;
    const std::string url_;
    const Identity identity_;
    const std::uint64_t serial_;
    ChecksumLookup checksum_lookup_;

    // The first bytes, fetched when opened, for the parsers' reads; let go at the first read of a tensor (parsing
    // is over by then), so that a model of thousands of shards does not keep 64 KiB of each: they become a piece of
    // block 0 then (in the disk cache, and in memory within the pieces' share of the budget).
    mutable std::mutex head_mutex_;
    mutable std::string head_;
    mutable std::atomic<bool> head_dropped_{false};

    RangeRequests requests_;
    DiskBlocks disk_;
    KeptBlocks kept_;
    BlockFetches fetches_;
    ReadAhead read_ahead_;
};

}  // namespace tensorfs::remote
