// A pool of threads running queued tasks in order. Two uses: work worth doing ahead of a reader (decode ahead,
// remote read-ahead), where the queue is bounded and a task offered while it is full is refused, since the reader
// will do that work itself if needed; and the FUSE read requests (src/fuse/mount.cpp), which are never refused and
// all answered before the pool ends.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tensorfs {

class BackgroundQueue {
public:
    // What the destructor does with the tasks still queued.
    enum class AtEnd { drop_queued, run_queued };

    // Threads start at the first task, not here: a daemon forks after building its state, and threads do not
    // survive a fork. They never take the signals that stop a mount (SIGINT, SIGTERM, SIGHUP): those must reach
    // the FUSE loop's thread.
    BackgroundQueue(unsigned threads, std::size_t max_queued, AtEnd at_end = AtEnd::drop_queued);
    // Drops or runs the queued tasks (AtEnd), lets running ones finish and joins the threads.
    ~BackgroundQueue();
    BackgroundQueue(const BackgroundQueue&) = delete;
    BackgroundQueue& operator=(const BackgroundQueue&) = delete;

    // Queues `task` unless the queue is full; returns whether it was queued. Tasks must not throw.
    bool offer(std::function<void()> task);

private:
    void run();

    const unsigned thread_count_;
    const std::size_t max_queued_;
    const AtEnd at_end_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace tensorfs
