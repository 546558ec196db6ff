// The chunk cache: byte budget, least-recently-used eviction, one decode for concurrent readers of a chunk, and
// failed decodes that leave nothing behind; the pool of workers that decodes ahead.
#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "tensorfs/background_queue.hpp"
#include "tensorfs/chunk_cache.hpp"
#include "tensorfs/dequant_reader.hpp"

using namespace tensorfs;

namespace {

constexpr std::size_t kChunk = 4096;

// A fill that writes `value` everywhere and counts its calls.
ChunkCache::Fill fill_with(float value, std::atomic<int>& calls, std::size_t bytes = kChunk) {
    return [value, &calls, bytes](float* values) {
        ++calls;
        for (std::size_t i = 0; i < bytes / 4; ++i) values[i] = value;
    };
}

// Polls `done` until it holds, for up to a minute (a generous bound for a busy machine); returns whether it held.
template <typename Condition>
bool eventually(Condition done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

float first_value(const ChunkRef& chunk) {
    float value;
    std::memcpy(&value, chunk->data(), 4);
    return value;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(chunk_cache)

BOOST_AUTO_TEST_CASE(second_get_is_a_hit_with_the_same_bytes) {
    Stats stats;
    ChunkCache cache(4 * kChunk, kChunk, stats);
    std::atomic<int> calls = 0;
    const ChunkRef first = cache.get({0, 7}, kChunk, fill_with(1.5f, calls));
    const ChunkRef again = cache.get({0, 7}, kChunk, fill_with(9.0f, calls));
    BOOST_TEST(calls == 1);
    BOOST_TEST(first == again);
    BOOST_TEST(first->size() == kChunk);
    BOOST_TEST(first_value(again) == 1.5f);
    BOOST_TEST(stats.cache_misses.get() == 1u);
    BOOST_TEST(stats.cache_hits.get() == 1u);
    BOOST_TEST(stats.cache_bytes_in_use.load() == kChunk);
}

BOOST_AUTO_TEST_CASE(budget_is_respected_and_least_recently_used_goes_first) {
    Stats stats;
    ChunkCache cache(3 * kChunk, kChunk, stats);
    std::atomic<int> calls = 0;
    for (std::uint64_t i = 0; i < 3; ++i) cache.get({1, i}, kChunk, fill_with(float(i), calls));
    cache.get({1, 0}, kChunk, fill_with(0, calls));   // 0 is now the most recent; 1 the least
    cache.get({1, 3}, kChunk, fill_with(3, calls));   // evicts 1
    BOOST_TEST(stats.cache_evictions.get() == 1u);
    BOOST_TEST(stats.cache_bytes_in_use.load() <= 3 * kChunk);
    calls = 0;
    cache.get({1, 0}, kChunk, fill_with(0, calls));
    cache.get({1, 2}, kChunk, fill_with(2, calls));
    cache.get({1, 3}, kChunk, fill_with(3, calls));
    BOOST_TEST(calls == 0);
    cache.get({1, 1}, kChunk, fill_with(1, calls));   // was evicted: decoded again
    BOOST_TEST(calls == 1);
    for (std::uint64_t i = 10; i < 50; ++i) {
        cache.get({2, i}, kChunk, fill_with(float(i), calls));
        BOOST_TEST(stats.cache_bytes_in_use.load() <= 3 * kChunk);
    }
}

BOOST_AUTO_TEST_CASE(evicted_chunk_stays_valid_while_held) {
    Stats stats;
    ChunkCache cache(kChunk, kChunk, stats);
    std::atomic<int> calls = 0;
    const ChunkRef held = cache.get({0, 0}, kChunk, fill_with(4.0f, calls));
    for (std::uint64_t i = 1; i < 10; ++i) cache.get({0, i}, kChunk, fill_with(float(i), calls));
    BOOST_TEST(stats.cache_evictions.get() == 9u);
    BOOST_TEST(first_value(held) == 4.0f);
    const float* values = reinterpret_cast<const float*>(held->data());
    BOOST_TEST(values[kChunk / 4 - 1] == 4.0f);
}

BOOST_AUTO_TEST_CASE(concurrent_readers_of_one_chunk_decode_it_once) {
    Stats stats;
    ChunkCache cache(64 * kChunk, kChunk, stats);
    std::atomic<int> calls = 0;
    const ChunkCache::Fill slow = [&](float* values) {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        for (std::size_t i = 0; i < kChunk / 4; ++i) values[i] = 2.5f;
    };
    std::vector<ChunkRef> results(8);
    std::vector<std::thread> readers;
    for (auto& result : results) readers.emplace_back([&] { result = cache.get({3, 3}, kChunk, slow); });
    for (auto& reader : readers) reader.join();
    BOOST_TEST(calls == 1);
    for (const auto& result : results) BOOST_TEST(result == results[0]);
    BOOST_TEST(first_value(results[0]) == 2.5f);
    BOOST_TEST(stats.cache_misses.get() == 1u);
    BOOST_TEST(stats.cache_hits.get() == 7u);
    BOOST_TEST(stats.cache_waits.get() >= 1u);
}

BOOST_AUTO_TEST_CASE(failed_decode_is_not_cached_and_waiters_retry) {
    Stats stats;
    ChunkCache cache(8 * kChunk, kChunk, stats);
    std::atomic<int> calls = 0;
    const ChunkCache::Fill fails = [&](float*) {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        throw std::runtime_error("source gone");
    };
    std::atomic<int> failures = 0;
    std::vector<std::thread> readers;
    for (int i = 0; i < 4; ++i) {
        readers.emplace_back([&] {
            try {
                cache.get({0, 1}, kChunk, fails);
            } catch (const std::runtime_error&) {
                ++failures;
            }
        });
    }
    for (auto& reader : readers) reader.join();
    BOOST_TEST(failures == 4);
    BOOST_TEST(stats.cache_bytes_in_use.load() == 0u);
    std::atomic<int> good = 0;
    BOOST_TEST(first_value(cache.get({0, 1}, kChunk, fill_with(6.0f, good))) == 6.0f);
    BOOST_TEST(good == 1);
}

BOOST_AUTO_TEST_CASE(fill_ahead_skips_present_chunks_and_counts_no_miss) {
    Stats stats;
    ChunkCache cache(8 * kChunk, kChunk, stats);
    std::atomic<int> calls = 0;
    BOOST_TEST(cache.fill_ahead({5, 0}, kChunk, fill_with(1.0f, calls)));
    BOOST_TEST(!cache.fill_ahead({5, 0}, kChunk, fill_with(1.0f, calls)));
    BOOST_TEST(calls == 1);
    BOOST_TEST(stats.cache_misses.get() == 0u);
    BOOST_TEST(stats.cache_decoded_ahead.get() == 1u);
    cache.get({5, 0}, kChunk, fill_with(1.0f, calls));
    BOOST_TEST(stats.cache_hits.get() == 1u);
    BOOST_TEST(calls == 1);
}

BOOST_AUTO_TEST_CASE(consumed_chunks_are_few_and_evicted_first) {
    Stats stats;
    ChunkCache cache(64 * kChunk, kChunk, stats);
    std::atomic<int> calls = 0;
    cache.get({0, 100}, kChunk, fill_with(1, calls));   // read by nobody to its end: stays
    for (std::uint64_t i = 0; i < 20; ++i) {
        cache.get({0, i}, kChunk, fill_with(float(i), calls));
        cache.consumed({0, i});
    }
    // Only the last few consumed chunks are kept, far under the budget.
    BOOST_TEST(stats.cache_evictions.get() == 12u);
    BOOST_TEST(stats.cache_bytes_in_use.load() == 9 * kChunk);
    calls = 0;
    cache.get({0, 100}, kChunk, fill_with(1, calls));
    cache.get({0, 19}, kChunk, fill_with(19, calls));   // a hit: back among the others, no longer consumed
    cache.get({0, 0}, kChunk, fill_with(0, calls));     // was evicted
    BOOST_TEST(calls == 1);
    for (std::uint64_t i = 20; i < 30; ++i) {
        cache.get({0, i}, kChunk, fill_with(float(i), calls));
        cache.consumed({0, i});
    }
    calls = 0;
    cache.get({0, 19}, kChunk, fill_with(19, calls));
    cache.get({0, 100}, kChunk, fill_with(1, calls));
    BOOST_TEST(calls == 0);
}

BOOST_AUTO_TEST_CASE(odd_sized_chunks_and_many_threads) {
    Stats stats;
    ChunkCache cache(10 * kChunk, kChunk, stats);
    std::atomic<int> calls = 0;
    std::vector<std::thread> threads;
    std::atomic<bool> wrong = false;
    for (int t = 0; t < 6; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < 300; ++round) {
                const std::uint64_t index = static_cast<std::uint64_t>((round * 7 + t) % 23);
                const std::size_t bytes = index % 3 == 0 ? 100 * 4 : kChunk;
                const ChunkRef chunk = cache.get({9, index}, bytes, fill_with(float(index), calls, bytes));
                const float* values = reinterpret_cast<const float*>(chunk->data());
                if (chunk->size() != bytes || values[0] != float(index) || values[bytes / 4 - 1] != float(index)) {
                    wrong = true;
                }
            }
        });
    }
    for (auto& thread : threads) thread.join();
    BOOST_TEST(!wrong);
    BOOST_TEST(stats.cache_bytes_in_use.load() <= 10 * kChunk);
}

BOOST_AUTO_TEST_CASE(chunk_size_follows_the_budget) {
    BOOST_TEST(chunk_bytes_for_budget(256ull << 20) == 1u << 20);
    BOOST_TEST(chunk_bytes_for_budget(16ull << 20) == 1u << 20);
    BOOST_TEST(chunk_bytes_for_budget(1ull << 20) == 64u << 10);
    BOOST_TEST(chunk_bytes_for_budget(64u << 10) == 4u << 10);
    BOOST_TEST(chunk_bytes_for_budget(0) == 4u << 10);
    BOOST_TEST(chunk_bytes_for_budget(100000) == 4u << 10);
    BOOST_TEST(chunk_bytes_for_budget(1000000) == 32u << 10);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(background_queue)

BOOST_AUTO_TEST_CASE(runs_tasks_and_refuses_when_full) {
    std::atomic<int> ran = 0;
    std::atomic<bool> started = false, release = false;
    {
        BackgroundQueue queue(1, 2);
        BOOST_TEST(queue.offer([&] {
            started = true;
            while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            ++ran;
        }));
        // Once the worker holds the first task, the queue holds exactly what follows.
        BOOST_REQUIRE(eventually([&] { return started.load(); }));
        BOOST_TEST(queue.offer([&] { ++ran; }));
        BOOST_TEST(queue.offer([&] { ++ran; }));
        BOOST_TEST(!queue.offer([&] { ++ran; }));
        release = true;
        BOOST_TEST(eventually([&] { return ran == 3; }));
    }
}

// As many tasks as workers run at the same time: each waits until all of them are running.
BOOST_AUTO_TEST_CASE(every_worker_runs_a_task_at_once) {
    constexpr int kWorkers = 3;
    std::atomic<int> running = 0, saw_all = 0;
    {
        BackgroundQueue queue(kWorkers, kWorkers);
        for (int i = 0; i < kWorkers; ++i) {
            BOOST_TEST(queue.offer([&] {
                ++running;
                if (eventually([&] { return running == kWorkers; })) ++saw_all;
            }));
        }
        BOOST_TEST(eventually([&] { return running == kWorkers; }));
    }  // joins the workers
    BOOST_TEST(saw_all == kWorkers);
}

// FUSE reads must each get an answer: a pool that runs what is queued at its end runs every task offered, however
// the end and the tasks interleave.
BOOST_AUTO_TEST_CASE(at_its_end_runs_what_is_queued_when_asked) {
    std::atomic<int> ran = 0;
    std::atomic<bool> started = false, release = false;
    std::thread releaser;
    {
        BackgroundQueue queue(1, 100, BackgroundQueue::AtEnd::run_queued);
        BOOST_TEST(queue.offer([&] {
            started = true;
            while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            ++ran;
        }));
        BOOST_REQUIRE(eventually([&] { return started.load(); }));
        for (int i = 0; i < 10; ++i) BOOST_TEST(queue.offer([&] { ++ran; }));
        releaser = std::thread([&] { release = true; });  // while the destructor below runs, or before it
    }
    releaser.join();
    BOOST_TEST(ran == 11);
}

BOOST_AUTO_TEST_SUITE_END()
