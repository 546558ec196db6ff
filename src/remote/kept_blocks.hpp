// What of one remote object is kept once fetched, for the reads that come for it: its blocks in the memory that the
// objects of a context share (remote_context.hpp: blocks in flight, recent and queued for the disk, within one
// budget), the pieces of blocks that exact reads fetched (in memory and in the disk cache, so that a read of the same
// bytes later, also in another mount, is served from them, and a block fetched whole later asks only for the rest),
// and its blocks in the disk cache (disk_blocks.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "block.hpp"
#include "disk_blocks.hpp"
#include "fetch_locks.hpp"
#include "read_deadline.hpp"
#include "remote_context.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::remote {

// How what a read fetched goes to the disk cache: queued for its writer thread, or written before the read
// returns (reads that may come before a daemon forks, whose threads would not be in the daemon).
enum class DiskWrite { Later, Now };

class KeptBlocks {
public:
    // The blocks of `object`, number `serial` of `context`, whose blocks in the disk cache `disk` knows (both the
    // object's, which outlives this).
    KeptBlocks(RemoteContext& context, const SourceObject& object, std::uint64_t serial, const DiskBlocks& disk);

    // Whether block `index` is in memory or on its way there (RemoteContext::find, which counts as a use of it).
    bool in_memory(std::uint64_t index) const { return context_.find(serial_, index).valid(); }

    // Copies `parts` of block `index` from memory or the disk cache; false when the block is in neither. A block on
    // its way is waited for until `deadline` (then IoError).
    bool serve(std::uint64_t index, std::span<const BlockPart> parts, Deadline deadline) const;
    // The bytes from `from` on (at most `length`) that the piece an exact read kept of the block holds, in memory or
    // in the disk cache: how many it copied, 0 when none holds byte `from`.
    std::size_t serve_piece(std::uint64_t index, std::uint64_t from, std::size_t length, char* dst) const;
    // Where an exact fetch from byte `after` to `end` stops (block `index` holds byte `after`): where the first piece
    // kept of a block from `index` on (in memory or in the disk cache) begins, when that is after `after` and before
    // `end`; else `end`.
    std::uint64_t stop_at_piece(std::uint64_t index, std::uint64_t end, std::uint64_t after) const;
    // The bytes of block `index` that exact reads kept, in memory or in the disk cache, taken from the memory;
    // nullopt when none are.
    std::optional<Piece> take_piece(std::uint64_t index) const;

    // A buffer for block `index`: each block has its own, so that a block dropped from memory frees its own bytes,
    // never waiting for the other blocks its range brought.
    std::shared_ptr<char[]> new_buffer(std::uint64_t index) const;
    // Makes the claimed blocks of their buffers, hands them to their waiters and queues them for the disk (or writes
    // them there), letting go of `locks[i]` (the blocks' fetch locks, when given) once block i is on disk. A block
    // without a buffer was not fetched here (another process fetches it, or the disk cache has it): its waiters get
    // nullptr and read it from the disk cache.
    void hand_over(RemoteContext::Claim& claim, const std::vector<std::shared_ptr<char[]>>& buffers,
                   const std::vector<HeldLock>& locks, DiskWrite disk_write) const;
    // Keeps what an exact fetch brought, bytes [offset, offset + length): its whole blocks as fetched blocks, the
    // parts of blocks at its ends as pieces (see RemoteContext::keep_piece). `locks` are the fetch locks of its
    // blocks from the one that holds `offset` on, let go of once each block's bytes are on disk.
    void keep_fetched(std::uint64_t offset, std::size_t length, const char* bytes, DiskWrite disk_write,
                      const std::vector<HeldLock>& locks = {}) const;

private:
    RemoteContext& context_;
    const SourceObject& object_;
    const std::uint64_t serial_;
    const DiskBlocks& disk_;
};

}  // namespace tensorfs::remote
