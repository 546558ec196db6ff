#include "read_workers.hpp"

#include "tensorfs/exit_signals.hpp"

namespace tensorfs {

ReadWorkers::ReadWorkers(unsigned threads) : thread_count_(threads == 0 ? 1 : threads) {}

ReadWorkers::~ReadWorkers() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (auto& thread : threads_) thread.join();
}

void ReadWorkers::run(std::function<void()> task) {
    {
        const std::lock_guard lock(mutex_);
        if (threads_.empty()) {
            start_threads_blocking_exit_signals([this] {
                for (unsigned i = 0; i < thread_count_; ++i) threads_.emplace_back([this] { work(); });
            });
        }
        tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
}

void ReadWorkers::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping, and every request answered
        std::function<void()> task = std::move(tasks_.front());
        tasks_.pop_front();
        lock.unlock();
        task();
        lock.lock();
    }
}

}  // namespace tensorfs
