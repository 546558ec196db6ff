// Following the readers of one remote object and fetching ahead of them. A read that continues a stream (starts
// near where one ended) fetches whole blocks of kBlockBytes, and the read-ahead keeps the blocks up to a window ahead
// fetched or on their way, in range requests of up to kRangeBytes on up to max_connections connections. The window
// is twice what the stream has read in order, up to about twice the link's measured rate × round trip
// (link_estimate.hpp) and at most readahead=, so it grows only while reads go in order and only as far as the link
// needs, and it stays open across tensors (their bytes follow each other in the file) and into the next object (a
// stream that reached an object's end hands its progress to the next stream that starts at another object's
// beginning: the next shard). A reader going on through blocks the disk cache held before this process fetched any
// of them opens no window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "block_fetches.hpp"
#include "disk_blocks.hpp"
#include "remote_context.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::remote {

class ReadAhead {
public:
    // The read-ahead of `object`, number `serial` of `context`, whose blocks in the disk cache `disk` knows (the
    // object's, which outlives this). It holds the context: its fetches may end after the object.
    ReadAhead(std::shared_ptr<RemoteContext> context, const SourceObject& object, std::uint64_t serial,
              const DiskBlocks& disk);

    // What a read learns of the reader's stream: how far ahead of the stream's end blocks should be fetched (0: a
    // read that is not (yet) sequential), and from which block the read-ahead goes on.
    struct Follow {
        std::uint64_t ahead = 0;
        std::uint64_t stream_end = 0;
        std::uint64_t scheduled = 0;
    };
    // Follows the reader whose read is bytes [offset, end): the stream it continues, or a new one.
    Follow follow(std::uint64_t offset, std::uint64_t end) const;

    // Claims the blocks of the window that `followed` learned which are neither in memory nor on their way, and
    // queues their fetches by `fetches` (a pointer that holds the object while a fetch runs) on the fetch threads.
    void fetch_ahead(const Follow& followed, const std::weak_ptr<const BlockFetches>& fetches) const;

private:
    void record_scheduled(std::uint64_t stream_end, std::uint64_t scheduled) const;

    const std::shared_ptr<RemoteContext> context_;
    const SourceObject& object_;
    const std::uint64_t serial_;
    const DiskBlocks& disk_;

    mutable std::mutex mutex_;
    // The recent streams of reads: where each ended, how much it read in order, up to where its read-ahead was
    // scheduled, when it was last used (for replacing the oldest).
    struct Stream {
        std::uint64_t end = 0;
        std::uint64_t bytes = 0;
        std::uint64_t scheduled = 0;  // in blocks
        std::uint64_t used = 0;
    };
    mutable std::vector<Stream> streams_;
    mutable std::uint64_t tick_ = 0;
};

}  // namespace tensorfs::remote
