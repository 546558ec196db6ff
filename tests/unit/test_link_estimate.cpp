// The read-ahead's window from the link's measured rate and round trip, driven with made-up clocks.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>

#include "remote/link_estimate.hpp"

namespace tensorfs::remote {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kFloor = 16 * kMiB;
constexpr std::uint64_t kLimit = 512 * kMiB;

// `parallel` fetches of `bytes` each, all started at `start_us` and answered `round_trip_us` later, over and over
// for `rounds` rounds; returns when the last round ended.
std::uint64_t run_rounds(LinkEstimate& link, std::uint64_t start_us, unsigned rounds, unsigned parallel,
                         std::uint64_t bytes, std::uint64_t first_byte_us, std::uint64_t round_trip_us) {
    for (unsigned round = 0; round < rounds; ++round) {
        for (unsigned i = 0; i < parallel; ++i) link.fetch_started(start_us);
        for (unsigned i = 0; i < parallel; ++i) {
            link.answered(bytes, first_byte_us, round_trip_us);
            link.fetch_ended(start_us + round_trip_us, bytes);
        }
        start_us += round_trip_us;
    }
    return start_us;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(link_estimate)

BOOST_AUTO_TEST_CASE(before_any_answer_the_window_may_open_to_the_limit) {
    const LinkEstimate link;
    BOOST_TEST(link.window_ceiling(kFloor, kLimit) == kLimit);
}

BOOST_AUTO_TEST_CASE(the_window_is_twice_rate_times_round_trip) {
    LinkEstimate link;
    // 8 ranges of 4 MiB in flight, each 40 ms to its last byte (1 ms to its first): 32 MiB per 40 ms.
    run_rounds(link, 1000, 10, 8, 4 * kMiB, 1000, 40'000);
    BOOST_TEST(link.round_trip_us() == 40'000.0);
    BOOST_TEST(link.first_byte_us() == 1000.0);
    BOOST_TEST(link.link_rate() == 32.0 * kMiB / 0.04, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(link.connection_rate() == 4.0 * kMiB / 0.039, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(link.window_ceiling(kFloor, kLimit) == 64 * kMiB);
}

BOOST_AUTO_TEST_CASE(a_window_limited_link_opens_the_window_further_with_each_sample) {
    LinkEstimate link;
    // Whatever is in flight arrives in 20 ms (no cap reached yet): the rate seen is window / round trip, and the
    // window grows towards twice what it was at each step (a sample can straddle two steps), up to the limit.
    std::uint64_t now = 0;
    std::uint64_t window = kFloor;
    int steps = 0;
    for (; window < kLimit && steps < 20; ++steps) {
        now = run_rounds(link, now, 4, static_cast<unsigned>(window / (4 * kMiB)), 4 * kMiB, 500, 20'000);
        const std::uint64_t next = link.window_ceiling(kFloor, kLimit);
        BOOST_TEST(next >= std::min(kLimit, window * 5 / 4));
        BOOST_TEST(next <= 2 * window);
        window = next;
    }
    BOOST_TEST(window == kLimit);
    BOOST_TEST(steps <= 10);  // from 16 MiB to 512 MiB: 5 doublings
}

BOOST_AUTO_TEST_CASE(the_window_stays_between_the_floor_and_the_limit) {
    LinkEstimate slow;
    run_rounds(slow, 0, 10, 1, kMiB, 100, 60'000);  // 1 MiB per 60 ms: 35 KiB of rate × round trip
    BOOST_TEST(slow.window_ceiling(kFloor, kLimit) == kFloor);
    BOOST_TEST(slow.window_ceiling(kFloor, 8 * kMiB) == 8 * kMiB);  // a limit under the floor wins
    LinkEstimate fast;
    run_rounds(fast, 0, 10, 64, 8 * kMiB, 100, 60'000);  // 512 MiB per 60 ms
    BOOST_TEST(fast.window_ceiling(kFloor, kLimit) == kLimit);
}

BOOST_AUTO_TEST_CASE(a_pause_between_fetches_does_not_count_as_a_slow_link) {
    LinkEstimate link;
    std::uint64_t now = run_rounds(link, 0, 5, 4, 4 * kMiB, 500, 20'000);
    const double rate = link.link_rate();
    // The reader stops for 10 s, then goes on as fast as before.
    now = run_rounds(link, now + 10'000'000, 5, 4, 4 * kMiB, 500, 20'000);
    BOOST_TEST(link.link_rate() == rate, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(one_sample_of_fetches_that_gave_up_lowers_the_rate_but_keeps_the_window_open) {
    LinkEstimate link;
    std::uint64_t now = run_rounds(link, 0, 5, 4, 4 * kMiB, 500, 20'000);
    const double rate = link.link_rate();
    // 60 ms of busy time that delivered nothing, then the next answer.
    link.fetch_started(now);
    link.fetch_ended(now + 60'000, 0);
    run_rounds(link, now + 60'000, 1, 4, 4 * kMiB, 500, 20'000);
    BOOST_TEST(link.link_rate() < rate);
    BOOST_TEST(link.link_rate() > rate / 2);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tensorfs::remote
