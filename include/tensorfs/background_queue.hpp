// A pool of background threads running queued tasks in order, for work worth doing ahead of a reader (decode
// ahead). The queue is bounded: a task offered while it is full is refused, since the reader will do that work
// itself if needed.
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
    // Threads start at the first task, not here: a daemon forks after building its state, and threads do not
    // survive a fork.
    BackgroundQueue(unsigned threads, std::size_t max_queued);
    // Drops the queued tasks, lets running ones finish and joins the threads.
    ~BackgroundQueue();
    BackgroundQueue(const BackgroundQueue&) = delete;
    BackgroundQueue& operator=(const BackgroundQueue&) = delete;

    // Queues `task` unless the queue is full; returns whether it was queued. Tasks must not throw.
    bool offer(std::function<void()> task);

private:
    void run();

    const unsigned thread_count_;
    const std::size_t max_queued_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace tensorfs
