// ExactFetches: a fetch of whole blocks waits for the exact fetches of its bytes under way, and for nothing else.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "remote/exact_fetches.hpp"

namespace tensorfs::remote {
namespace {

using Clock = std::chrono::steady_clock;
const auto kFarAway = std::chrono::hours(1);

}  // namespace

BOOST_AUTO_TEST_SUITE(exact_fetches)

BOOST_AUTO_TEST_CASE(ranges_that_do_not_overlap_are_not_waited_for) {
    ExactFetches fetches;
    const ExactFetches::UnderWay before(fetches, 0, 100);
    const ExactFetches::UnderWay after(fetches, 200, 300);
    fetches.wait_for(100, 200, Clock::now() + kFarAway);  // returns at once, or the test hangs
}

BOOST_AUTO_TEST_CASE(an_overlapping_fetch_is_waited_for_until_it_ends) {
    ExactFetches fetches;
    std::atomic<bool> kept{false};
    auto under_way = std::make_unique<ExactFetches::UnderWay>(fetches, 50, 150);
    std::thread fetcher([&] {
        kept = true;  // what it fetched is kept before the range ends
        under_way.reset();
    });
    fetches.wait_for(100, 200, Clock::now() + kFarAway);
    BOOST_TEST(kept.load());
    fetcher.join();
}

BOOST_AUTO_TEST_CASE(the_wait_ends_at_its_deadline) {
    ExactFetches fetches;
    const ExactFetches::UnderWay stuck(fetches, 0, 100);
    fetches.wait_for(0, 10, Clock::now());  // the caller fetches the bytes itself then
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tensorfs::remote
