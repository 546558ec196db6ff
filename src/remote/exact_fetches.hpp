// The byte ranges of one object that reads fetch exactly (reads that are not sequential yet) while they are under
// way. A fetch of whole blocks that starts meanwhile waits for them and then takes the pieces they kept, instead of
// asking the server for the same bytes again: the kernel hands a sequential reader's requests over out of order, so
// one of them may look like a random touch and be fetched exactly just as the read-ahead claims its blocks.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tensorfs::remote {

class ExactFetches {
public:
    // Marks bytes [begin, end) as being fetched until it is destroyed (after what they fetched is kept).
    class UnderWay {
    public:
        UnderWay(ExactFetches& owner, std::uint64_t begin, std::uint64_t end);
        ~UnderWay();
        UnderWay(const UnderWay&) = delete;
        UnderWay& operator=(const UnderWay&) = delete;

    private:
        ExactFetches& owner_;
        std::uint64_t id_;
    };

    // Waits until the exact fetches under way now that overlap bytes [begin, end) are over, or until `deadline`
    // (then the caller fetches those bytes itself).
    void wait_for(std::uint64_t begin, std::uint64_t end, std::chrono::steady_clock::time_point deadline);

private:
    struct Range {
        std::uint64_t id;
        std::uint64_t begin;
        std::uint64_t end;
    };
    std::mutex mutex_;
    std::condition_variable ended_;
    std::vector<Range> ranges_;
    std::uint64_t next_id_ = 0;
};

}  // namespace tensorfs::remote
