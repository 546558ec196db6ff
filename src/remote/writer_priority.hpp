// The disk cache's writer thread writes at idle priority while it keeps up, and at normal priority once it falls
// behind.
//
// A cold load keeps the machine's cores busy with the reader, the fetch threads and often a server beside them;
// the writer copying every byte once more into the cache's files competed with them for the same cores and slowed
// the load it keeps (docs/benchmarks.md, rows L3 and L11). At SCHED_IDLE it takes only what they leave, which is
// enough while its queue stays short. But an idle thread on a machine busy with other work would get next to
// nothing, and a full queue holds fetches back: past half of its queue, or while someone waits for the writes (an
// unmount, `prefetch`), it writes at normal priority again.
#pragma once

#include <cstddef>

namespace tensorfs::remote {

class WriterPriority {
public:
    // For the calling thread, whose queue holds at most `most_queued` bytes.
    explicit WriterPriority(std::size_t most_queued) : most_queued_(most_queued) {}

    // Sets the calling thread's priority for `queued` bytes waiting, and whether someone waits for them all (a
    // system call only when it changes).
    void follow(std::size_t queued, bool awaited);

private:
    std::size_t most_queued_;
    enum class Level { Unset, Idle, Normal } level_ = Level::Unset;
};

}  // namespace tensorfs::remote
