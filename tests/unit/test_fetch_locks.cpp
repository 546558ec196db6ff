// The fetch locks of the disk cache (src/remote/fetch_locks.hpp): one process at a time per block, counted within a
// process, let go of when the process dies, held by a queued block until it is on disk, and waits seen by the others.
// Two FetchLocks of one folder stand for two processes: each opens the lock file itself, and open file description
// locks of two opens conflict as those of two processes do.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "remote/disk_cache.hpp"
#include "remote/fetch_locks.hpp"
#include "temp_folder.hpp"

namespace tensorfs::remote {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Object folders as the disk cache names them (hashes in hex).
const std::filesystem::path kObject = "0123456789abcdef0123456789abcdef";
const std::filesystem::path kOtherObject = "fedcba98765432100123456789abcdef";

// Two processes' locks over one disk cache folder.
struct TwoProcesses {
    const test::TempFolder folder;
    FetchLocks first{folder.path()};
    FetchLocks second{folder.path()};
};

BOOST_AUTO_TEST_SUITE(fetch_locks)

BOOST_FIXTURE_TEST_CASE(one_process_at_a_time_per_block, TwoProcesses) {
    HeldLock held = first.try_lock(kObject, 3);
    BOOST_REQUIRE(held != nullptr);
    BOOST_TEST(second.try_lock(kObject, 3) == nullptr);
    BOOST_TEST(second.held_elsewhere(kObject, 3));
    BOOST_TEST(!first.held_elsewhere(kObject, 3));  // its own lock is no other's
    // Other blocks, and the same block of another object, are free.
    BOOST_TEST(second.try_lock(kObject, 4) != nullptr);
    BOOST_TEST(second.try_lock(kOtherObject, 3) != nullptr);
    held.reset();
    BOOST_TEST(!second.held_elsewhere(kObject, 3));
    BOOST_TEST(second.try_lock(kObject, 3) != nullptr);
}

BOOST_FIXTURE_TEST_CASE(a_lock_taken_twice_in_a_process_goes_with_its_last_holder, TwoProcesses) {
    HeldLock fetch = first.try_lock(kObject, 7);
    HeldLock again = first.try_lock(kObject, 7);  // another thread of the same process: never refused
    BOOST_REQUIRE(fetch != nullptr);
    BOOST_REQUIRE(again != nullptr);
    HeldLock copy = again;  // a queued write's
    fetch.reset();
    again.reset();
    BOOST_TEST(second.held_elsewhere(kObject, 7));
    copy.reset();
    BOOST_TEST(!second.held_elsewhere(kObject, 7));
}

BOOST_FIXTURE_TEST_CASE(a_wait_ends_at_its_deadline_or_when_the_lock_goes, TwoProcesses) {
    HeldLock held = first.try_lock(kObject, 1);
    BOOST_REQUIRE(held != nullptr);
    BOOST_TEST(!second.wait_while_held_elsewhere(kObject, 1, Clock::now() + 20ms));
    BOOST_TEST(second.wait_while_held_elsewhere(kObject, 2, Clock::now() + 20ms));  // nobody holds block 2
    std::thread holder([&held] { held.reset(); });
    BOOST_TEST(second.wait_while_held_elsewhere(kObject, 1, Clock::now() + 60s));
    holder.join();
}

BOOST_FIXTURE_TEST_CASE(a_process_sees_that_another_waits_until_the_wait_ends, TwoProcesses) {
    HeldLock held = first.try_lock(kObject, 1);
    BOOST_REQUIRE(held != nullptr);
    BOOST_TEST(!first.someone_waits());
    bool waited = false;
    std::thread waiter([&] { waited = second.wait_while_held_elsewhere(kObject, 1, Clock::now() + 60s); });
    const auto deadline = Clock::now() + 60s;
    while (!first.someone_waits() && Clock::now() < deadline) std::this_thread::yield();
    BOOST_TEST(first.someone_waits());
    BOOST_TEST(!second.someone_waits());  // its own wait is no other's
    held.reset();
    waiter.join();
    BOOST_TEST(waited);
    BOOST_TEST(!first.someone_waits());
}

BOOST_AUTO_TEST_CASE(the_locks_of_a_process_that_dies_go_with_it) {
    const test::TempFolder folder;
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        // Takes block 5's lock, says so, and waits to be killed with it held.
        FetchLocks locks(folder.path());
        const HeldLock held = locks.try_lock(kObject, 5);
        const char byte = held != nullptr ? '1' : '0';
        if (::write(ready[1], &byte, 1) != 1) ::_exit(1);
        for (;;) ::pause();
    }
    ::close(ready[1]);
    char byte = 0;
    BOOST_REQUIRE(::read(ready[0], &byte, 1) == 1);
    ::close(ready[0]);
    FetchLocks mine(folder.path());
    BOOST_TEST(byte == '1');
    BOOST_TEST(mine.held_elsewhere(kObject, 5));
    BOOST_TEST(mine.try_lock(kObject, 5) == nullptr);
    ::kill(child, SIGKILL);
    int status = 0;
    BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
    BOOST_TEST(!mine.held_elsewhere(kObject, 5));
    BOOST_TEST(mine.try_lock(kObject, 5) != nullptr);
}

BOOST_AUTO_TEST_CASE(a_queued_block_holds_its_lock_until_it_is_on_disk) {
    const test::TempFolder folder;
    DiskCache cache(folder.path(), 64 << 20);
    const auto object = cache.object_folder("https://h/m.safetensors\netag \"1\"\nsize 3000\nblock 1048576\n");
    BOOST_REQUIRE(object);
    FetchLocks other(cache.folder());  // another process's view of the same folder
    std::vector<BlockPtr> blocks;
    std::vector<HeldLock> locks;
    for (std::uint64_t index = 0; index < 3; ++index) {
        auto storage = std::shared_ptr<char[]>(new char[1000]);
        std::fill_n(storage.get(), 1000, static_cast<char>('a' + index));
        auto block = std::make_shared<Block>();
        block->storage = storage;
        block->length = 1000;
        block->index = index;
        blocks.push_back(std::move(block));
        locks.push_back(cache.fetch_locks().try_lock(*object, index));
        BOOST_REQUIRE(locks.back() != nullptr);
    }
    cache.write_later(*object, 0, blocks, locks);
    locks.clear();  // the queue holds them now
    for (std::uint64_t index = 0; index < 3; ++index) {
        // Whenever the lock goes, the block is there whole: a waiter never finds it missing or torn.
        BOOST_TEST(other.wait_while_held_elsewhere(*object, index, Clock::now() + 60s));
        std::string bytes(1000, '\0');
        BOOST_TEST(cache.read(*object, index, bytes.data(), bytes.size()));
        BOOST_TEST(bytes == std::string(1000, static_cast<char>('a' + index)));
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace tensorfs::remote
