#include "exact_fetches.hpp"

#include <algorithm>

namespace tensorfs::remote {

ExactFetches::UnderWay::UnderWay(ExactFetches& owner, std::uint64_t begin, std::uint64_t end) : owner_(owner) {
    const std::lock_guard lock(owner_.mutex_);
    id_ = owner_.next_id_++;
    owner_.ranges_.push_back({id_, begin, end});
}

ExactFetches::UnderWay::~UnderWay() {
    {
        const std::lock_guard lock(owner_.mutex_);
        std::erase_if(owner_.ranges_, [this](const Range& range) { return range.id == id_; });
    }
    owner_.ended_.notify_all();
}

void ExactFetches::wait_for(std::uint64_t begin, std::uint64_t end, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    // Only those under way now: an exact fetch that starts later stops before blocks claimed already.
    std::uint64_t last_id = 0;
    bool any = false;
    for (const Range& range : ranges_) {
        if (range.begin < end && begin < range.end) {
            last_id = std::max(last_id, range.id);
            any = true;
        }
    }
    if (!any) return;
    ended_.wait_until(lock, deadline, [&] {
        return std::none_of(ranges_.begin(), ranges_.end(), [&](const Range& range) {
            return range.id <= last_id && range.begin < end && begin < range.end;
        });
    });
}

}  // namespace tensorfs::remote
