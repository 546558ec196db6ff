#include "interruptible.hpp"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// How often a waiting call looks for signals: Ctrl-C is honoured within this, and the GIL is taken this often.
constexpr auto kSignalCheck = std::chrono::milliseconds(50);

struct Job {
    Work work;
    std::atomic<bool> stop{false};
    std::mutex mutex;
    std::condition_variable ended;
    bool done = false;
    std::exception_ptr failure;
};

// The jobs under way, so that the exit can wait for them. Never destroyed: a job may end while the process exits.
class Running {
public:
    void add(const std::shared_ptr<Job>& job) {
        const std::lock_guard lock(mutex_);
        jobs_.push_back(job);
    }

    void remove(const Job* job) {
        {
            const std::lock_guard lock(mutex_);
            std::erase_if(jobs_, [&](const std::shared_ptr<Job>& running) { return running.get() == job; });
        }
        emptied_.notify_all();
    }

    void stop_all_and_wait() {
        std::unique_lock lock(mutex_);
        for (const auto& job : jobs_) job->stop = true;
        emptied_.wait(lock, [&] { return jobs_.empty(); });
    }

private:
    std::mutex mutex_;
    std::condition_variable emptied_;
    std::vector<std::shared_ptr<Job>> jobs_;
};

Running& running() {
    static auto* jobs = new Running;
    return *jobs;
}

void run_job(const std::shared_ptr<Job>& job) {
    try {
        job->work(job->stop);
    } catch (...) {
        job->failure = std::current_exception();
    }
    // What the work captured (an engine, arrays' memory) goes here, on this thread, before the exit may go on.
    job->work = nullptr;
    {
        const std::lock_guard lock(job->mutex);
        job->done = true;
    }
    job->ended.notify_all();
    running().remove(job.get());
}

}  // namespace

void run_interruptibly(Work work, bool brief) {
    if (brief) {
        const std::atomic<bool> never{false};
        const py::gil_scoped_release unlocked;
        work(never);
        return;
    }
    auto job = std::make_shared<Job>();
    job->work = std::move(work);
    running().add(job);
    try {
        std::thread([job] { run_job(job); }).detach();
    } catch (...) {
        running().remove(job.get());
        throw;
    }
    for (;;) {
        {
            const py::gil_scoped_release unlocked;
            std::unique_lock lock(job->mutex);
            if (job->ended.wait_for(lock, kSignalCheck, [&] { return job->done; })) break;
        }
        if (PyErr_CheckSignals() != 0) {
            job->stop = true;
            throw py::error_already_set();
        }
    }
    if (job->failure) std::rethrow_exception(job->failure);
}

void finish_interrupted_work() {
    const py::gil_scoped_release unlocked;
    running().stop_all_and_wait();
}

}  // namespace tensorfs::python
