#include "tensorfs/in_parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace tensorfs {

void in_parallel(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& job) {
    std::vector<std::exception_ptr> failures(count);
    std::atomic<std::size_t> next{0};
    const auto work = [&] {
        for (std::size_t index; (index = next.fetch_add(1)) < count;) {
            try {
                job(index);
            } catch (...) {
                failures[index] = std::current_exception();
            }
        }
    };
    const std::size_t helpers = std::min<std::size_t>(count, std::max(1u, threads)) - (count > 0 ? 1 : 0);
    std::vector<std::thread> started;
    started.reserve(helpers);
    for (std::size_t i = 0; i < helpers; ++i) started.emplace_back(work);
    work();
    for (auto& thread : started) thread.join();
    for (const auto& failure : failures) {
        if (failure) std::rethrow_exception(failure);
    }
}

}  // namespace tensorfs
