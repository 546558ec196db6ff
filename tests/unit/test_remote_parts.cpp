// Parts of the remote layer that need no server: URL arithmetic, Hub addresses, the disk block cache.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "remote/block_buffers.hpp"
#include "remote/digest.hpp"
#include "remote/disk_cache.hpp"
#include "remote/hub.hpp"
#include "remote/remote_context.hpp"
#include "remote/url.hpp"
#include "temp_folder.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/remote_source.hpp"

namespace tensorfs::remote {
namespace fs = std::filesystem;

namespace {

// Blocks [0, count) of object 1, each `length` bytes in a buffer of its own.
std::vector<BlockPtr> new_blocks(std::size_t count, std::size_t length = std::size_t{1} << 20) {
    std::vector<BlockPtr> blocks;
    for (std::size_t i = 0; i < count; ++i) {
        auto bytes = std::make_shared<char[]>(length);
        auto block = std::make_shared<Block>();
        block->storage = bytes;
        block->length = length;
        block->serial = 1;
        block->index = i;
        blocks.push_back(std::move(block));
    }
    return blocks;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(remote_parts)

BOOST_AUTO_TEST_CASE(origins_fill_in_default_ports_and_lower_case_hosts) {
    BOOST_TEST(origin_of("https://HuggingFace.co/org/repo") == "https://huggingface.co:443");
    BOOST_TEST(origin_of("http://127.0.0.1:8080/x") == "http://127.0.0.1:8080");
    BOOST_TEST(origin_of("https://huggingface.co:443/a") == origin_of("https://huggingface.co/b"));
    BOOST_TEST(origin_of("https://cdn-lfs.huggingface.co/a") != origin_of("https://huggingface.co/a"));
    BOOST_TEST(origin_of("not a url").empty());
}

BOOST_AUTO_TEST_CASE(redirects_resolve_against_the_url_that_gave_them) {
    BOOST_TEST(resolve_url("https://h/a/b/c.gguf", "d.gguf") == "https://h/a/b/d.gguf");
    BOOST_TEST(resolve_url("https://h/a/b/c.gguf", "/x/y") == "https://h/x/y");
    BOOST_TEST(resolve_url("https://h/a", "http://other:81/z?sig=1") == "http://other:81/z?sig=1");
}

BOOST_AUTO_TEST_CASE(names_never_carry_credentials) {
    BOOST_TEST(without_credentials("https://user:secret@h/x.gguf") == "https://h/x.gguf");
    BOOST_TEST(without_credentials("https://h/x.gguf") == "https://h/x.gguf");
}

BOOST_AUTO_TEST_CASE(percent_encoding_round_trips) {
    BOOST_TEST(percent_encode("a b/c%d.gguf", "/") == "a%20b/c%25d.gguf");
    BOOST_TEST(percent_encode("refs/pr/1") == "refs%2Fpr%2F1");
    BOOST_TEST(percent_decode("a%20b/c%25d.gguf") == "a b/c%d.gguf");
    BOOST_TEST(percent_decode("100%") == "100%");
}

BOOST_AUTO_TEST_CASE(hub_addresses) {
    const HubAddress plain = parse_hub_address("hf://org/repo");
    BOOST_TEST(plain.repo == "org/repo");
    BOOST_TEST(plain.revision == "main");
    BOOST_TEST(!plain.revision_given);
    BOOST_TEST(plain.path.empty());

    const HubAddress full = parse_hub_address("hf://org/repo@refs%2Fpr%2F3/sub/dir/model.gguf");
    BOOST_TEST(full.revision == "refs/pr/3");
    BOOST_TEST(full.revision_given);
    BOOST_TEST(full.path == "sub/dir/model.gguf");

    for (const char* bad :
         {"hf://", "hf://org", "hf://org/", "hf://org/repo@", "hf://org/../x", "hf://org/repo/a/../b"}) {
        BOOST_CHECK_THROW(parse_hub_address(bad), SourceError);
    }
}

BOOST_AUTO_TEST_CASE(remote_sources_are_told_from_paths) {
    BOOST_TEST(is_remote_source("https://h/x.gguf"));
    BOOST_TEST(is_remote_source("http://h/x.gguf"));
    BOOST_TEST(is_remote_source("hf://org/repo"));
    BOOST_TEST(!is_remote_source("models/x.gguf"));
    BOOST_TEST(is_remote_source("s3://bucket/key"));
}

BOOST_AUTO_TEST_CASE(hf_sources_name_a_file_or_a_folder) {
    const SourceLocation file = resolve_remote("hf://org/repo@v1/sub/model.safetensors", {});
    BOOST_TEST(file.file == "model.safetensors");
    BOOST_TEST(file.folder->name() == "hf://org/repo@v1/sub");
    BOOST_TEST(file.folder->name_of("x.json") == "hf://org/repo@v1/sub/x.json");
    const SourceLocation folder = resolve_remote("hf://org/repo/sub", {});
    BOOST_TEST(folder.file.empty());
    const SourceLocation url = resolve_remote("https://u:p@h/a/my%20model-00001-of-00002.gguf?download=1", {});
    BOOST_TEST(url.file == "my model-00001-of-00002.gguf");
    BOOST_TEST(url.folder->name_of("my model-00002-of-00002.gguf") ==
               "https://h/a/my%20model-00002-of-00002.gguf?download=1");
}

BOOST_AUTO_TEST_CASE(the_disk_cache_keeps_whole_blocks_by_key) {
    const test::TempFolder folder;
    DiskCache cache(folder.path(), 1 << 20);
    const auto object = cache.object_folder("https://h/x.gguf\netag \"1\"\n");
    BOOST_REQUIRE(object);
    const std::string block(1000, 'x');
    std::string read(1000, '\0');
    BOOST_TEST(!cache.read(*object, 0, read.data(), read.size()));
    cache.write(*object, 0, block.data(), block.size());
    BOOST_TEST(cache.read(*object, 0, read.data(), read.size()));
    BOOST_TEST(read == block);
    // Another identity is another object: it never meets these blocks.
    const auto changed = cache.object_folder("https://h/x.gguf\netag \"2\"\n");
    BOOST_REQUIRE(changed);
    BOOST_TEST(!cache.read(*changed, 0, read.data(), read.size()));
    // A block of the wrong length (not what this process wrote) is never served, and goes.
    BOOST_TEST(!cache.read(*object, 0, read.data(), 999));
    BOOST_TEST(!fs::exists(*object / "0.block"));
}

BOOST_AUTO_TEST_CASE(direct_writes_keep_a_block_out_of_the_page_cache_and_read_back_whole) {
    const test::TempFolder folder;
    DiskCache cache(folder.path(), 1 << 30, {}, DiskCache::kMaxQueuedBytes, true);
    const auto object = cache.object_folder("https://h/x.safetensors\netag \"1\"\n");
    BOOST_REQUIRE(object);
    // A block's buffer is a mapping of its own (block_buffers.cpp); its length here is not a multiple of a page, so
    // its tail takes an ordinary write.
    const std::size_t length = (std::size_t{1} << 20) + 1000;
    const std::shared_ptr<char[]> buffer = std::make_shared<BlockBuffers>(length, 0)->take(length);
    for (std::size_t i = 0; i < length; ++i) buffer[i] = static_cast<char>(i * 7 + i / 4096);
    cache.write(*object, 0, buffer.get(), length);

    const fs::path file = *object / "0.block";
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_REQUIRE(fd >= 0);
    struct statfs where {};
    BOOST_REQUIRE(::fstatfs(fd, &where) == 0);
    void* mapped = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
    BOOST_REQUIRE(mapped != MAP_FAILED);
    std::vector<unsigned char> resident((length + 4095) / 4096);
    BOOST_REQUIRE(::mincore(mapped, length, resident.data()) == 0);
    const auto whole_pages_resident = std::count_if(resident.begin(), resident.end() - 1, [](unsigned char page) {
        return (page & 1) != 0;
    });
    // tmpfs keeps every file in the page cache, O_DIRECT or not.
    if (where.f_type != TMPFS_MAGIC) BOOST_TEST(whole_pages_resident == 0);
    ::munmap(mapped, length);
    ::close(fd);

    std::vector<char> read(length);
    BOOST_REQUIRE(cache.read(*object, 0, read.data(), length));
    BOOST_TEST(std::equal(read.begin(), read.end(), buffer.get()));
}

BOOST_AUTO_TEST_CASE(the_disk_cache_evicts_the_least_recently_used_blocks) {
    const test::TempFolder folder;
    DiskCache cache(folder.path(), 10 * 1000);
    const auto object = cache.object_folder("key");
    BOOST_REQUIRE(object);
    const std::string block(1000, 'b');
    std::string read(1000, '\0');
    for (int i = 0; i < 10; ++i) cache.write(*object, i, block.data(), block.size());
    // Block 0 is read last of the old ones (made older first, since mtimes may tie within a test's speed).
    for (int i = 0; i < 10; ++i) {
        const fs::path path = *object / (std::to_string(i) + ".block");
        const timespec times[2] = {{1000 + i, 0}, {1000 + i, 0}};
        BOOST_REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
    }
    BOOST_TEST(cache.read(*object, 0, read.data(), read.size()));
    for (int i = 10; i < 14; ++i) cache.write(*object, i, block.data(), block.size());
    std::uint64_t total = 0;
    for (const auto& entry : fs::directory_iterator(*object)) {
        if (entry.path().extension() == ".block") total += fs::file_size(entry.path());
    }
    BOOST_TEST(total <= 10u * 1000);
    BOOST_TEST(fs::exists(*object / "0.block"));   // recently read
    BOOST_TEST(!fs::exists(*object / "1.block"));  // the oldest not read again
    BOOST_TEST(fs::exists(*object / "13.block"));  // just written
}

BOOST_AUTO_TEST_CASE(the_disk_cache_serves_parts_of_a_block_straight_into_the_reader) {
    const test::TempFolder folder;
    DiskCache cache(folder.path(), 1 << 20);
    const auto object = cache.object_folder("https://h/y.safetensors\netag \"1\"\n");
    BOOST_REQUIRE(object);
    std::string block(4000, '\0');
    for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 7 + 3);
    BOOST_TEST(!cache.has(*object, 2, block.size()));
    cache.write(*object, 2, block.data(), block.size());
    BOOST_TEST(cache.has(*object, 2, block.size()));
    BOOST_TEST(!cache.has(*object, 2, block.size() + 1));
    std::string part(100, '\0');
    std::string other(30, '\0');
    const BlockPart parts[] = {{1234, part.size(), part.data()}, {17, other.size(), other.data()}};
    BOOST_TEST(cache.read_parts(*object, 2, block.size(), parts, false));
    BOOST_TEST(part == block.substr(1234, 100));
    BOOST_TEST(other == block.substr(17, 30));
    const BlockPart last{3900, part.size(), part.data()};
    BOOST_TEST(cache.read_parts(*object, 2, block.size(), {&last, 1}, true));
    BOOST_TEST(part == block.substr(3900, 100));
    // Asked as a block of another length: not the block this is, never served.
    BOOST_TEST(!cache.read_parts(*object, 2, block.size() - 1, {&last, 1}, false));
    cache.write(*object, 3, block.data(), block.size());
    cache.remove_object(*object);
    BOOST_TEST(!cache.has(*object, 3, block.size()));
}

BOOST_AUTO_TEST_CASE(queued_disk_writes_are_counted_while_they_wait) {
    const test::TempFolder folder;
    std::atomic<std::int64_t> queued{0};
    std::atomic<std::int64_t> most{0};
    DiskCache cache(folder.path(), 1 << 20, [&](const BlockPtr& block, bool is_queued) {
        const std::int64_t length = static_cast<std::int64_t>(block->length);
        const std::int64_t now = queued += is_queued ? length : -length;
        if (now > most) most = now;
    }, 3000);
    const auto object = cache.object_folder("key");
    BOOST_REQUIRE(object);
    // Batches of two, as a range's blocks come: each counts from the call, while its caller waits for room.
    for (std::uint64_t i = 0; i < 20; i += 2) cache.write_later(*object, i, new_blocks(2, 1000));
    cache.wait_written();
    BOOST_TEST(queued.load() == 0);
    BOOST_TEST(most.load() <= 3000 + 2000);  // the queue's bound, and the batch its caller holds waiting
    BOOST_TEST(cache.has(*object, 19, 1000));
}

// A context going away with blocks still queued for the disk writes them first, while the memory accounting that
// each finished write calls back into is still alive (the context ends its disk writer before its members go).
BOOST_AUTO_TEST_CASE(a_context_destroyed_with_queued_disk_writes_writes_them_first) {
    const test::TempFolder folder;
    SourceOptions options;
    options.cache_dir = folder.path();
    options.memory_budget = 8 << 20;  // the least: the queued writes alone fill it
    auto context = std::make_unique<RemoteContext>(options, nullptr,
                                                   [](const Response&) { return std::string(); });
    const auto object = context->disk().object_folder("key");
    BOOST_REQUIRE(object);
    const std::vector<BlockPtr> blocks = new_blocks(64);
    // Blocks kept in memory too, which the accounting drops as the queue's writes come back to it.
    RemoteContext::Claim claim = context->claim(1, 0, 4, 4 << 20);
    BOOST_REQUIRE(claim.promises.size() == 4);
    context->deliver(claim, {blocks.begin(), blocks.begin() + 4});
    context->disk().write_later(*object, 0, blocks);
    context.reset();
    DiskCache cache(folder.path(), 1 << 30);
    BOOST_TEST(cache.has(*object, 63, 1 << 20));
}

// A block kept for readers and queued for the disk at once is one buffer: it counts once against the budget.
BOOST_AUTO_TEST_CASE(a_block_both_kept_and_queued_for_the_disk_counts_once) {
    const test::TempFolder folder;
    SourceOptions options;
    options.cache_dir = folder.path();
    options.memory_budget = 64 << 20;  // its disk queue: 16 MiB
    RemoteContext context(options, {}, [](const Response&) { return std::string(); });
    const auto object = context.disk().object_folder("key");
    BOOST_REQUIRE(object);
    constexpr std::size_t kBlocks = 56;
    const std::vector<BlockPtr> blocks = new_blocks(kBlocks);
    RemoteContext::Claim claim = context.claim(1, 0, kBlocks, kBlocks << 20);
    BOOST_REQUIRE(claim.promises.size() == kBlocks);
    context.deliver(claim, blocks);
    // Counted twice, the 16 MiB queued would push 72 MiB past the 64 MiB budget and evict blocks.
    context.disk().write_later(*object, 0, {blocks.begin(), blocks.begin() + 16});
    for (std::size_t i = 0; i < kBlocks; ++i) BOOST_TEST(context.find(1, i).valid(), "block " << i << " evicted");
    BOOST_TEST(context.counters().bytes_queued_for_disk.get() == 0);  // the stats count each block once too
    BOOST_TEST(context.counters().bytes_in_memory.get() == static_cast<std::int64_t>(kBlocks << 20));
    context.disk().wait_written();
}

// A block dropped from the memory of recent blocks while its disk write waits is still in memory: a reader gets
// it from there, not from a second fetch, until it is written.
BOOST_AUTO_TEST_CASE(a_block_dropped_while_queued_for_the_disk_is_found_until_written) {
    const test::TempFolder folder;
    SourceOptions options;
    options.cache_dir = folder.path();
    options.memory_budget = 8 << 20;
    RemoteContext context(options, {}, [](const Response&) { return std::string(); });
    const std::vector<BlockPtr> blocks = new_blocks(4);
    RemoteContext::Claim delivered = context.claim(1, 0, 4, 4 << 20);
    context.deliver(delivered, blocks);
    context.queued_for_disk(blocks[0], true);  // as the disk cache says when the write is queued
    // 6 MiB more in flight: the oldest blocks leave the memory of recent blocks (0 first, then 1 and 2).
    RemoteContext::Claim more = context.claim(1, 10, 6, 6 << 20);
    BOOST_REQUIRE(more.promises.size() == 6);
    BOOST_TEST(!context.find(1, 1).valid());  // dropped, and not queued: gone
    BOOST_TEST(context.find(1, 0).valid());   // dropped, but its write still holds it
    BOOST_TEST(context.find(1, 0).get() == blocks[0]);
    BOOST_TEST(context.claim(1, 0, 1, 1 << 20).promises.empty());  // nobody fetches it again
    context.queued_for_disk(blocks[0], false);  // written: the disk cache has it now
    BOOST_TEST(!context.find(1, 0).valid());
    context.give_up(more, nullptr);
}

// Blocks kept for readers but still waiting for the disk cannot be dropped to make room: the read-ahead counts
// them, or a disk slower than the link would let it fetch on past the budget while the writes pile up.
BOOST_AUTO_TEST_CASE(the_read_ahead_waits_for_room_while_blocks_wait_for_the_disk) {
    const test::TempFolder folder;
    SourceOptions options;
    options.cache_dir = folder.path();
    options.memory_budget = 16 << 20;  // the read-ahead may hold 12 MiB
    options.max_connections = 4;
    RemoteContext context(options, {}, [](const Response&) { return std::string(); });
    const std::vector<BlockPtr> blocks = new_blocks(8);
    RemoteContext::Claim delivered = context.claim(1, 0, 8, 8 << 20);
    context.deliver(delivered, blocks);
    for (const BlockPtr& block : blocks) context.queued_for_disk(block, true);
    RemoteContext::Claim ahead;
    BOOST_TEST(!context.claim_ahead(1, 8, 8, 8 << 20, ahead));  // 8 MiB queued + 8 MiB more > 12 MiB
    BOOST_TEST(context.claim_ahead(1, 8, 4, 4 << 20, ahead));   // 8 + 4 fits
    BOOST_REQUIRE(ahead.promises.size() == 4);
    context.give_up(ahead, nullptr);
    for (const BlockPtr& block : blocks) context.queued_for_disk(block, false);  // written
    RemoteContext::Claim after;
    BOOST_TEST(context.claim_ahead(1, 8, 8, 8 << 20, after));  // the kept blocks may go now: room
    BOOST_TEST(after.promises.size() == 8);
    context.give_up(after, nullptr);
}

// A reader's fetch is never refused, but it waits while what frees itself (fetches in flight, blocks queued for a
// slow disk) fills the budget: every reader thread fetching a block of its own into a full disk queue went past it.
BOOST_AUTO_TEST_CASE(a_reader_waits_while_fetches_and_the_disk_queue_fill_the_budget) {
    const test::TempFolder folder;
    SourceOptions options;
    options.cache_dir = folder.path();
    options.memory_budget = 8 << 20;
    RemoteContext context(options, {}, [](const Response&) { return std::string(); });
    // (A claim that does not wait comes back within this time; one that waits passes whatever the machine's speed.)
    const auto waits = [](std::future<RemoteContext::Claim>& claim) {
        return claim.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout;
    };
    const std::vector<BlockPtr> blocks = new_blocks(8);
    RemoteContext::Claim delivered = context.claim(1, 0, 8, 8 << 20);
    context.deliver(delivered, blocks, true);  // counted as queued for the disk from here on
    BOOST_TEST(context.counters().bytes_in_memory.get() == 8 << 20);
    BOOST_TEST(context.claim(1, 3, 1, 1 << 20).promises.empty());  // a block in memory: nobody claims it, at once
    auto reader = std::async(std::launch::async, [&] { return context.claim(1, 8, 1, 1 << 20); });
    BOOST_TEST(waits(reader));
    context.queued_for_disk(blocks[0], false);  // one written: room for the reader's block
    RemoteContext::Claim in_flight = reader.get();
    BOOST_TEST(in_flight.promises.size() == 1);
    for (std::size_t i = 1; i < blocks.size(); ++i) context.queued_for_disk(blocks[i], false);

    RemoteContext::Claim more = context.claim(1, 9, 7, 7 << 20);  // the budget full of fetches in flight
    BOOST_REQUIRE(more.promises.size() == 7);
    auto next = std::async(std::launch::async, [&] { return context.claim(1, 16, 1, 1 << 20); });
    BOOST_TEST(waits(next));
    // Bytes a reader fetched already, to keep, never wait for fetches in flight: one of them may wait for this
    // reader (an exact read holds back the fetches of its bytes until it ends).
    RemoteContext::Claim fetched = context.claim_fetched(1, 20, 1, 1 << 20);
    BOOST_TEST(fetched.promises.size() == 1);
    context.give_up(fetched, nullptr);
    context.give_up(more, nullptr);
    RemoteContext::Claim after = next.get();
    BOOST_TEST(after.promises.size() == 1);
    context.give_up(after, nullptr);
    context.give_up(in_flight, nullptr);
}

// stats.json adds the three memory figures up (a test checks the sum against the budget): a block moving from in
// flight to kept, over and over, never shows in both or in neither.
BOOST_AUTO_TEST_CASE(the_memory_figures_are_read_as_one) {
    RemoteCounters counters;
    counters.set_memory({5, 0, 1});
    std::atomic<bool> moving{false};
    std::atomic<bool> done{false};
    std::thread mover([&] {
        for (std::int64_t i = 0; !done; ++i) {
            counters.set_memory(i % 2 == 0 ? RemoteCounters::Memory{5, 0, 1} : RemoteCounters::Memory{0, 5, 1});
            moving = true;
        }
    });
    while (!moving) std::this_thread::yield();
    std::size_t torn = 0;
    for (int i = 0; i < 4000000; ++i) {
        const RemoteCounters::Memory memory = counters.memory();
        if (memory.in_flight + memory.in_memory + memory.queued_for_disk != 6) ++torn;
    }
    done = true;
    mover.join();
    BOOST_TEST(torn == 0u);
}

BOOST_AUTO_TEST_CASE(block_buffers_are_reused_up_to_what_is_kept_and_outlive_their_pool_owner) {
    auto pool = std::make_shared<BlockBuffers>(4096, 2 * 4096);  // keeps two freed buffers
    auto first = pool->take(4096);
    auto second = pool->take(4096);
    auto third = pool->take(4096);
    std::fill_n(first.get(), 4096, 'a');
    // Compared as addresses: Boost.Test compares two char pointers as C strings, and these bytes end in no NUL.
    const void* first_bytes = first.get();
    first.reset();
    BOOST_TEST(static_cast<const void*>(pool->take(4096).get()) == first_bytes);  // a freed buffer comes back
    auto short_one = pool->take(100);  // the last block of an object: its own size, never kept
    std::fill_n(short_one.get(), 100, 'b');
    pool.reset();  // the buffers keep their pool
    std::fill_n(third.get(), 4096, 'c');
    second.reset();
    third.reset();
    short_one.reset();
}

BOOST_AUTO_TEST_CASE(digests_match_the_published_test_vectors) {
    // FIPS 180-4's and RFC 1321's examples, and a million 'a's fed in uneven pieces (more than one padding block).
    Digest abc(Digest::Kind::Sha256);
    abc.update("abc", 3);
    BOOST_TEST(abc.hex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    Digest md5_abc(Digest::Kind::Md5);
    md5_abc.update("abc", 3);
    BOOST_TEST(md5_abc.hex() == "900150983cd24fb0d6963f7d28e17f72");
    const std::string text = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    Digest two_blocks(Digest::Kind::Sha256);
    two_blocks.update(text.data(), text.size());
    BOOST_TEST(two_blocks.hex() == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const std::string million(1000000, 'a');
    Digest sha(Digest::Kind::Sha256);
    Digest md5(Digest::Kind::Md5);
    for (std::size_t at = 0, piece = 1; at < million.size(); at += piece, piece = piece * 3 % 1000 + 1) {
        const std::size_t length = std::min(piece, million.size() - at);
        sha.update(million.data() + at, length);
        md5.update(million.data() + at, length);
    }
    BOOST_TEST(sha.hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    BOOST_TEST(md5.hex() == "7707d6ae4e027c70eea2a935c2296f21");
}

BOOST_AUTO_TEST_CASE(pieces_of_a_block_merge_when_they_overlap_or_touch_else_the_longer_stays) {
    const auto piece = [](std::size_t begin, const std::string& bytes) { return Piece{begin, bytes}; };
    const Piece overlapping = merged(piece(10, "abcdef"), piece(13, "defgh"));
    BOOST_TEST(overlapping.begin == 10u);
    BOOST_TEST(overlapping.bytes == "abcdefgh");
    const Piece touching = merged(piece(4, "ef"), piece(0, "abcd"));
    BOOST_TEST(touching.begin == 0u);
    BOOST_TEST(touching.bytes == "abcdef");
    const Piece inside = merged(piece(0, "abcdef"), piece(2, "cd"));
    BOOST_TEST(inside.bytes == "abcdef");
    const Piece apart = merged(piece(0, "ab"), piece(10, "klm"));
    BOOST_TEST(apart.begin == 10u);
    BOOST_TEST(apart.bytes == "klm");
}

// What an exact read fetched of a block stays on disk, merged with what came before, served from where it begins,
// until the whole block is written.
BOOST_AUTO_TEST_CASE(pieces_of_blocks_are_kept_on_disk_until_the_whole_block_is) {
    const test::TempFolder folder;
    DiskCache cache(folder.path(), 1 << 30);
    const auto object = cache.object_folder("key");
    BOOST_REQUIRE(object);
    cache.write_piece_later(*object, 3, std::make_shared<const Piece>(Piece{100, std::string(50, 'a')}));
    cache.write_piece_later(*object, 3, std::make_shared<const Piece>(Piece{150, std::string(50, 'b')}));
    cache.wait_written();
    const auto kept = cache.read_piece(*object, 3);
    BOOST_REQUIRE(kept);
    BOOST_TEST(kept->begin == 100u);
    BOOST_TEST(kept->bytes == std::string(50, 'a') + std::string(50, 'b'));
    char bytes[64];
    BOOST_TEST(cache.read_from_piece(*object, 3, 140, bytes, sizeof bytes) == 60u);  // to the piece's end
    BOOST_TEST(std::string(bytes, 10) == std::string(10, 'a'));
    BOOST_TEST(std::string(bytes + 10, 50) == std::string(50, 'b'));
    BOOST_TEST(cache.read_from_piece(*object, 3, 99, bytes, sizeof bytes) == 0u);  // before it
    BOOST_TEST(cache.read_from_piece(*object, 4, 100, bytes, sizeof bytes) == 0u);  // another block
    BOOST_TEST(cache.piece_begin(*object, 3).value_or(0) == 100u);
    BOOST_TEST(!cache.piece_begin(*object, 4));
    const std::string whole(1 << 20, 'w');
    cache.write(*object, 3, whole.data(), whole.size());
    BOOST_TEST(!cache.read_piece(*object, 3));
    BOOST_TEST(!cache.piece_begin(*object, 3));
    cache.write_piece_later(*object, 3, std::make_shared<const Piece>(Piece{0, "late"}));
    cache.wait_written();
    BOOST_TEST(!cache.read_piece(*object, 3));  // the whole block is there: no piece of it
}

// A piece written at once (a read before a daemon forks) is there when write_piece returns, with no writer thread.
BOOST_AUTO_TEST_CASE(a_piece_written_at_once_is_there_when_the_call_returns) {
    const test::TempFolder folder;
    DiskCache cache(folder.path(), 1 << 30);
    const auto object = cache.object_folder("key");
    BOOST_REQUIRE(object);
    cache.write_piece(*object, 0, Piece{8, "header"});
    const auto kept = cache.read_piece(*object, 0);
    BOOST_REQUIRE(kept);
    BOOST_TEST(kept->begin == 8u);
    BOOST_TEST(kept->bytes == "header");
}

BOOST_AUTO_TEST_CASE(the_disk_cache_remembers_what_a_url_answered) {
    const test::TempFolder folder;
    DiskCache cache(folder.path(), 1 << 30);
    BOOST_TEST(!cache.remembered("http://h/a"));
    cache.remember("http://h/a", {"\"etag\"", "Mon, 01 Jan 2024 00:00:00 GMT", 1234, cache.folder() / "0123abcd"});
    const auto known = cache.remembered("http://h/a");
    BOOST_REQUIRE(known);
    BOOST_TEST(known->etag == "\"etag\"");
    BOOST_TEST(known->last_modified == "Mon, 01 Jan 2024 00:00:00 GMT");
    BOOST_TEST(known->size == 1234u);
    BOOST_TEST(known->object == cache.folder() / "0123abcd");
    BOOST_TEST(!cache.remembered("http://h/b"));
    forget_every_url(cache.folder());
    BOOST_TEST(!cache.remembered("http://h/a"));
    DiskCache off(folder.path(), 0);
    BOOST_TEST(!off.remembered("http://h/a"));
}

BOOST_AUTO_TEST_CASE(a_disk_cache_of_size_zero_keeps_nothing) {
    const test::TempFolder folder;
    DiskCache cache(folder.path(), 0);
    BOOST_TEST(!cache.object_folder("key"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tensorfs::remote
