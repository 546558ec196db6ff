// Reads of one remote object's bytes, block by block: served from where they are kept (kept_blocks.hpp), else
// fetched over the network (range_requests.hpp) in one of two ways, as the caller says:
//   - exactly the bytes asked for (up to the next block or piece kept), kept afterwards: whole blocks as blocks,
//     parts of blocks as pieces;
//   - whole blocks of kBlockBytes, claimed first, so that a block wanted by several readers and the read-ahead at
//     once is fetched once, and fetched around the pieces kept of them once the exact fetches of their bytes still
//     under way are over (exact_fetches.hpp): each byte is fetched once.
// Either way, bytes of a block are fetched only on this process's turn (DiskBlocks::take_turn): when another process
// that shares the disk cache is fetching the block, the read waits for it to land there and reads it from there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "disk_blocks.hpp"
#include "exact_fetches.hpp"
#include "kept_blocks.hpp"
#include "range_requests.hpp"
#include "read_deadline.hpp"
#include "remote_context.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::remote {

class BlockFetches {
public:
    // The fetches of `object`, number `serial` of `context`, through `requests`, keeping what they bring in `kept`
    // and `disk` (all the object's, which outlives this).
    BlockFetches(RemoteContext& context, const SourceObject& object, std::uint64_t serial,
                 const RangeRequests& requests, const DiskBlocks& disk, const KeptBlocks& kept);

    // Bytes [offset, offset + length) into `out`, block by block: from memory or the disk cache, else fetched:
    // `exact`ly, or whole blocks. What an exact fetch brought goes to the disk as `disk_write` says.
    void read(std::uint64_t offset, std::size_t length, char* out, bool exact, Deadline deadline,
              DiskWrite disk_write) const;

    // The parts of `runs` (in the order of their offsets, none overlapping) from the whole blocks that hold them,
    // fetched when neither memory nor the disk cache has them: a block once however many runs it holds.
    void gather(std::span<const SourceObject::Run> runs, Deadline deadline) const;

    // Fetches the claimed blocks that are this process's to fetch (in one range request, or one per gap between
    // pieces kept of them, or blocks another process fetches) by `deadline`, hands them to their waiters and queues
    // them for the disk; the waiters of the others get nullptr (they are read from the disk cache), and those that
    // another process fetches go to `left` (when given). Returns the bytes of the blocks fetched here. Throws IoError
    // (which the waiters get too) when they cannot be fetched.
    std::size_t fetch_claimed(RemoteContext::Claim& claim, Deadline deadline,
                              std::vector<std::uint64_t>* left = nullptr) const;

    // Fetches blocks [first, last] that the disk cache lacks and returns once they are written there, on as many
    // threads as the context's max_connections; tells `progress` of the bytes done (fetched, or found cached).
    // Returns the bytes fetched.
    std::uint64_t fetch_to_disk(std::uint64_t first, std::uint64_t last, const SourceObject::Progress& progress) const;

private:
    // Bytes from `at` on (up to `end`) of the block that holds `at`, into `out`: from memory or the disk cache, else
    // fetched exactly. Returns how many it read: 0 when it waited for another process fetching the block (then
    // served from the disk cache by the next call).
    std::size_t read_exactly(std::uint64_t at, std::uint64_t end, char* out, Deadline deadline,
                             DiskWrite disk_write) const;
    // `parts` of block `index`, from memory or the disk cache, else from blocks [index, last] claimed and fetched
    // whole (those that no one fetches yet), or from the disk cache once another process fetching it is done.
    void read_whole_blocks(std::uint64_t index, std::uint64_t last, std::span<const BlockPart> parts,
                           Deadline deadline) const;
    // Fetches the bytes from `offset` on that fill the buffers of `into` (RangeRequests::fetch), and marks their
    // blocks as fetched by this process.
    void fetch(std::uint64_t offset, std::vector<std::span<char>> into, Deadline deadline) const;

    RemoteContext& context_;
    const SourceObject& object_;
    const std::uint64_t serial_;
    const RangeRequests& requests_;
    const DiskBlocks& disk_;
    const KeptBlocks& kept_;
    mutable ExactFetches exact_fetches_;
};

}  // namespace tensorfs::remote
