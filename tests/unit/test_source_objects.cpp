// The source-file layer that every parser reads through: local folders and files, parallel header reads, and
// the number of reads a header takes (each one a range request when the file is remote).
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/gguf_file.hpp"
#include "temp_folder.hpp"
#include "test_gguf_builder.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/in_parallel.hpp"
#include "tensorfs/local_folder.hpp"

namespace tensorfs {
namespace {

// Bytes in memory that count the reads made of them.
class CountingObject : public SourceObject {
public:
    explicit CountingObject(std::vector<std::uint8_t> bytes)
        : SourceObject("memory.gguf", bytes.size(), timespec{}), bytes_(std::move(bytes)) {}

    void read(std::uint64_t offset, std::size_t length, void* dst) const override {
        ++reads;
        if (offset > bytes_.size() || length > bytes_.size() - offset) throw IoError(name(), "read past the end");
        std::memcpy(dst, bytes_.data() + offset, length);
    }

    mutable std::atomic<int> reads{0};

private:
    std::vector<std::uint8_t> bytes_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(source_objects)

BOOST_AUTO_TEST_CASE(a_local_folder_lists_its_regular_files_sorted) {
    const test::TempFolder folder;
    folder.write("b.gguf", std::string("b"));
    folder.write("a.safetensors", std::string("a"));
    folder.write("sub/c.gguf", std::string("c"));
    std::filesystem::create_symlink(folder.path() / "absent", folder.path() / "dangling.gguf");
    std::filesystem::create_symlink(folder.path() / "b.gguf", folder.path() / "link.gguf");
    const LocalFolder local(folder.path());
    BOOST_TEST(local.list() == (std::vector<std::string>{"a.safetensors", "b.gguf", "link.gguf"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_local_file_reads_and_names_itself_as_given) {
    const test::TempFolder folder;
    folder.write("sub/x.bin", std::string("0123456789"));
    const LocalFolder local(folder.path());
    const auto file = local.open("sub/x.bin");
    BOOST_TEST(file->name() == (folder.path() / "sub/x.bin").string());
    BOOST_TEST(file->size() == 10u);
    char bytes[4];
    file->read(3, 4, bytes);
    BOOST_TEST(std::string(bytes, 4) == "3456");
    BOOST_CHECK_THROW(file->read(8, 4, bytes), IoError);
}

// The mount answers a read on its request thread only when read_if_cached copied every byte; anything else (here:
// bytes the file no longer has) must say false, so that a worker reads them and answers the error.
BOOST_AUTO_TEST_CASE(a_local_file_copies_cached_bytes_and_says_false_where_it_cannot) {
    const test::TempFolder folder;
    folder.write("x.bin", std::string("0123456789"));  // just written: its pages are in the page cache
    const auto file = LocalFolder(folder.path()).open("x.bin");
    char bytes[4];
    BOOST_TEST(file->read_if_cached(3, 4, bytes));
    BOOST_TEST(std::string(bytes, 4) == "3456");
    std::filesystem::resize_file(folder.path() / "x.bin", 5);
    BOOST_TEST(!file->read_if_cached(3, 4, bytes));
}

BOOST_AUTO_TEST_CASE(a_missing_file_is_nullptr_and_a_folder_is_refused) {
    const test::TempFolder folder;
    folder.write("sub/x.bin", std::string("x"));
    const LocalFolder local(folder.path());
    BOOST_TEST(local.open_if_exists("absent.bin") == nullptr);
    try {
        local.open("absent.bin");
        BOOST_FAIL("a missing file was opened");
    } catch (const SourceError& invalid) {
        BOOST_TEST(invalid.problems().at(0).line() == "tensorfs: " + (folder.path() / "absent.bin").string() +
                                                          ": no such file");
    }
    BOOST_CHECK_THROW(local.open_if_exists("sub"), SourceError);
}

BOOST_AUTO_TEST_CASE(parallel_jobs_all_run_and_the_first_failure_is_rethrown) {
    std::vector<std::atomic<int>> runs(100);
    const auto job = [&](std::size_t index) {
        ++runs[index];
        if (index == 30 || index == 70) throw std::runtime_error(std::to_string(index));
    };
    const auto is_first = [](const std::runtime_error& error) { return error.what() == std::string("30"); };
    BOOST_CHECK_EXCEPTION(in_parallel(runs.size(), 4, job), std::runtime_error, is_first);
    for (const auto& count : runs) BOOST_TEST(count.load() == 1);
    in_parallel(0, 4, [](std::size_t) { BOOST_FAIL("a job ran for an empty range"); });
}

// A 4 MiB header (a long string array, like a tokenizer's) is read in a few growing windows, not in 64 KiB steps:
// a remote file's header takes a handful of range requests.
BOOST_AUTO_TEST_CASE(a_large_gguf_header_takes_few_reads) {
    std::vector<std::uint8_t> tokens;
    constexpr std::uint64_t kTokens = 200'000;
    test::GgufBuilder::put(tokens, std::uint32_t{test::kGgufString});
    test::GgufBuilder::put(tokens, kTokens);
    for (std::uint64_t i = 0; i < kTokens; ++i) test::GgufBuilder::put_string(tokens, "token-" + std::to_string(i));
    auto object = std::make_shared<CountingObject>(
        test::GgufBuilder().kv("tokenizer.ggml.tokens", test::kGgufArray, tokens).bytes());
    const auto file = gguf::read_gguf_file(object);
    BOOST_TEST(file.metadata.values["tokenizer.ggml.tokens"].size() == kTokens);
    BOOST_TEST(object->reads.load() <= 8, "reads: " << object->reads.load());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tensorfs
