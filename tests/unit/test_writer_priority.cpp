// WriterPriority: the disk cache's writer is idle-priority while its queue is short, normal once it is half full or
// someone waits for its writes.
#include <boost/test/unit_test.hpp>

#include <sched.h>

#include <thread>

#include "remote/writer_priority.hpp"

namespace tensorfs::remote {

BOOST_AUTO_TEST_SUITE(writer_priority)

BOOST_AUTO_TEST_CASE(idle_while_the_queue_is_short_normal_past_half_of_it_or_while_awaited) {
    int short_queue = -1, half_full = -1, short_again = -1, awaited = -1;
    // A thread of its own: the test runner's keeps its priority.
    std::thread writer([&] {
        WriterPriority priority(100);
        priority.follow(10, false);
        short_queue = sched_getscheduler(0);
        priority.follow(51, false);
        half_full = sched_getscheduler(0);
        priority.follow(50, false);
        short_again = sched_getscheduler(0);
        priority.follow(10, true);
        awaited = sched_getscheduler(0);
    });
    writer.join();
    BOOST_TEST(short_queue == SCHED_IDLE);
    BOOST_TEST(half_full == SCHED_OTHER);
    BOOST_TEST(short_again == SCHED_IDLE);
    BOOST_TEST(awaited == SCHED_OTHER);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tensorfs::remote
