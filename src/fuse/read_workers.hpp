// The threads that serve read requests, while one thread (libfuse's single-threaded loop) takes every request from
// the kernel and answers the others itself.
//
// Why not libfuse's multithreaded loop: all its idle threads wait in read() on /dev/fuse, and the kernel wakes
// them in turn, so a stream of small requests (a walk: lookup, readdirplus, getattr, each a few microseconds of
// work) hops from thread to thread and often to the other CPU. One thread that answers them itself and goes
// straight back to read() halved the time of a first `find` over 10,000 tensor folders, and its CPU time (the
// figures are in docs/benchmarks.md). Reads may take long (decoding, page faults in the source, remote sources):
// they go to these workers, so that other requests and other readers never wait behind them; only a small read
// of `raw` whose pages are already in the page cache is answered by the loop's thread (fuse_ops.cpp).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tensorfs {

class ReadWorkers {
public:
    // The threads start with the first task (a daemon forks after building its state: threads do not survive a
    // fork). They never take the signals that stop a mount (SIGINT, SIGTERM, SIGHUP): those must reach the
    // loop's thread, blocked in read() on /dev/fuse, to end it.
    explicit ReadWorkers(unsigned threads);
    // Runs every queued task, then joins the threads.
    ~ReadWorkers();
    ReadWorkers(const ReadWorkers&) = delete;
    ReadWorkers& operator=(const ReadWorkers&) = delete;

    // Queues `task` (which answers its request and must not throw); never drops one.
    void run(std::function<void()> task);

private:
    void work();

    const unsigned thread_count_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace tensorfs
