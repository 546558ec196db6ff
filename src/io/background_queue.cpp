#include "tensorfs/background_queue.hpp"

#include "tensorfs/exit_signals.hpp"

namespace tensorfs {

BackgroundQueue::BackgroundQueue(unsigned threads, std::size_t max_queued, AtEnd at_end)
    : thread_count_(threads == 0 ? 1 : threads), max_queued_(max_queued), at_end_(at_end) {}

BackgroundQueue::~BackgroundQueue() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
        if (at_end_ == AtEnd::drop_queued) tasks_.clear();
    }
    wake_.notify_all();
    for (auto& thread : threads_) thread.join();
}

bool BackgroundQueue::offer(std::function<void()> task) {
    {
        const std::lock_guard lock(mutex_);
        if (stopping_ || tasks_.size() >= max_queued_) return false;
        if (threads_.empty()) {
            start_threads_blocking_exit_signals([this] {
                for (unsigned i = 0; i < thread_count_; ++i) threads_.emplace_back([this] { run(); });
            });
        }
        tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
    return true;
}

void BackgroundQueue::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping, and nothing left to run
        std::function<void()> task = std::move(tasks_.front());
        tasks_.pop_front();
        lock.unlock();
        task();
        lock.lock();
    }
}

}  // namespace tensorfs
