#include "writer_priority.hpp"

#include <pthread.h>
#include <sched.h>

namespace tensorfs::remote {

void WriterPriority::follow(std::size_t queued, bool awaited) {
    const Level wanted = awaited || queued > most_queued_ / 2 ? Level::Normal : Level::Idle;
    if (wanted == level_) return;
    level_ = wanted;
    // A failure leaves the thread at the priority it had: the writes are the same, only their share of the CPU.
    const sched_param none{};
    pthread_setschedparam(pthread_self(), wanted == Level::Idle ? SCHED_IDLE : SCHED_OTHER, &none);
}

}  // namespace tensorfs::remote
