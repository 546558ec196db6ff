// Content::read without a mount: dequant.f32, dequant.npy and raw of tiny-llama-Q4_K_M.gguf at odd offsets and
// lengths across chunk borders, with cache budgets from "evicts all the time" to the default, and from threads.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>

#include "tensorfs/content.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/open_source.hpp"
#include "test_gguf_builder.hpp"
#include "vectors.hpp"

using namespace tensorfs;

namespace {

const std::string kSource = "gguf/tiny-llama-Q4_K_M.gguf";

struct Mounted {
    explicit Mounted(std::uint64_t budget)
        : catalog(open_catalog(test::vectors_path(kSource))), tree(catalog), files(catalog),
          content(catalog, tree, files, stats, budget) {}

    Node file(std::uint32_t tensor, NodeKind kind) const { return Node{kind, tensor}; }

    Catalog catalog;
    Tree tree;
    SourceFiles files;
    Stats stats;
    Content content;
};

// Bytes of the tensor's expected float32 file (ggml's own output).
std::string expected_f32(const std::string& name) {
    const auto bytes = test::read_bytes(test::vectors_path("gguf/tiny-llama-Q4_K_M.expected/" + name + ".f32"));
    return std::string(bytes.begin(), bytes.end());
}

std::string read_range(Content& content, Node node, std::uint64_t offset, std::size_t length) {
    std::string out(length, '\0');
    out.resize(content.read(node, offset, length, out.data()));
    return out;
}

// Offsets near every chunk border (and the ends), with lengths from one byte to three chunks.
std::vector<std::pair<std::uint64_t, std::size_t>> ranges(std::uint64_t size, std::size_t chunk) {
    std::vector<std::pair<std::uint64_t, std::size_t>> out{{0, size}, {size - 1, 1}, {size, 10}, {size + 5, 1}};
    const std::size_t lengths[] = {1, 2, 3, 5, 4096, chunk - 1, chunk, chunk + 1, 2 * chunk + 3, 3 * chunk - 1};
    for (std::uint64_t border = chunk; border < size; border += chunk) {
        for (const std::int64_t delta : {-7, -4, -1, 0, 1, 2, 4, 9}) {
            const std::int64_t start = static_cast<std::int64_t>(border) + delta;
            if (start < 0 || static_cast<std::uint64_t>(start) >= size) continue;
            for (const std::size_t length : lengths) out.emplace_back(static_cast<std::uint64_t>(start), length);
        }
    }
    return out;
}

std::string slice(const std::string& whole, std::uint64_t offset, std::size_t length) {
    return offset >= whole.size() ? std::string() : whole.substr(offset, length);
}

void check_tensor(Mounted& m, std::uint32_t index) {
    const Tensor& tensor = m.catalog.tensors[index];
    const std::string f32 = expected_f32(tensor.name);
    const std::string npy = m.content.npy_header(index) + f32;
    const auto raw_bytes = test::read_bytes(test::vectors_path(kSource), tensor.offset, tensor.nbytes);
    const std::string raw(raw_bytes.begin(), raw_bytes.end());
    const std::size_t chunk = m.content.chunk_bytes();
    for (const auto& [offset, length] : ranges(f32.size(), chunk)) {
        BOOST_TEST_CONTEXT(tensor.name << " f32 at " << offset << " length " << length) {
            BOOST_TEST((read_range(m.content, m.file(index, NodeKind::DequantF32), offset, length) ==
                        slice(f32, offset, length)));
        }
    }
    for (const auto& [offset, length] : ranges(npy.size(), chunk)) {
        BOOST_TEST_CONTEXT(tensor.name << " npy at " << offset << " length " << length) {
            BOOST_TEST((read_range(m.content, m.file(index, NodeKind::DequantNpy), offset, length) ==
                        slice(npy, offset, length)));
        }
    }
    for (const auto& [offset, length] : ranges(raw.size(), chunk / 8)) {
        BOOST_TEST_CONTEXT(tensor.name << " raw at " << offset << " length " << length) {
            BOOST_TEST((read_range(m.content, m.file(index, NodeKind::Raw), offset, length) ==
                        slice(raw, offset, length)));
        }
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(content_read)

BOOST_AUTO_TEST_CASE(tiny_budget_small_chunks_every_border) {
    Mounted m(64 << 10);
    BOOST_TEST(m.content.chunk_bytes() == 4096u);
    for (std::uint32_t i = 0; i < m.catalog.tensors.size(); ++i) {
        if (m.catalog.tensors[i].elements >= 65536 || m.catalog.tensors[i].elements < 1024) check_tensor(m, i);
    }
    BOOST_TEST(m.stats.cache_evictions.get() > 0u);
    BOOST_TEST(m.stats.cache_bytes_in_use.load() <= (64u << 10));
}

BOOST_AUTO_TEST_CASE(medium_and_default_budgets) {
    for (const std::uint64_t budget : {std::uint64_t{1} << 20, kDefaultCacheBudget}) {
        Mounted m(budget);
        for (std::uint32_t i = 0; i < m.catalog.tensors.size(); i += 3) check_tensor(m, i);
    }
}

BOOST_AUTO_TEST_CASE(threads_reading_one_tensor_agree) {
    Mounted m(64 << 10);
    const auto biggest = std::max_element(m.catalog.tensors.begin(), m.catalog.tensors.end(),
                                          [](const Tensor& a, const Tensor& b) { return a.elements < b.elements; });
    const auto index = static_cast<std::uint32_t>(biggest - m.catalog.tensors.begin());
    const std::string expected = expected_f32(biggest->name);
    std::atomic<int> mismatches = 0;
    std::vector<std::thread> readers;
    for (int t = 0; t < 6; ++t) {
        readers.emplace_back([&, t] {
            const std::size_t step = 3000 + 1000 * static_cast<std::size_t>(t);
            for (int round = 0; round < 3; ++round) {
                for (std::uint64_t offset = 0; offset < expected.size(); offset += step) {
                    if (read_range(m.content, Node{NodeKind::DequantF32, index}, offset, step) !=
                        slice(expected, offset, step)) {
                        ++mismatches;
                    }
                }
            }
        });
    }
    for (auto& reader : readers) reader.join();
    BOOST_TEST(mismatches == 0);
    BOOST_TEST(m.stats.cache_bytes_in_use.load() <= (64u << 10) + 6 * 4096u);
}

BOOST_AUTO_TEST_CASE(a_source_shrunk_after_opening_gives_io_errors_not_signals) {
    test::TempFolder folder;
    const auto copy = folder.write("copy.gguf", test::read_bytes(test::vectors_path(kSource)));
    const Catalog catalog = open_catalog(copy.string());
    const Tree tree(catalog);
    const SourceFiles files(catalog);
    Stats stats;
    Content content(catalog, tree, files, stats, 64 << 10);
    const auto last = static_cast<std::uint32_t>(catalog.tensors.size() - 1);
    const Tensor& tensor = catalog.tensors[last];
    BOOST_TEST(files.mapped(tensor.file, tensor.offset, tensor.nbytes) != nullptr);

    BOOST_REQUIRE(::truncate(copy.c_str(), static_cast<off_t>(tensor.offset + 1)) == 0);
    BOOST_CHECK_THROW(files.mapped(tensor.file, tensor.offset, tensor.nbytes), IoError);
    const Tensor& first = catalog.tensors[0];
    std::string out(std::max<std::size_t>({tensor.nbytes, first.nbytes, 4096}), '\0');
    BOOST_CHECK_THROW(content.read(Node{NodeKind::Raw, last}, 0, tensor.nbytes, out.data()), IoError);
    BOOST_CHECK_THROW(content.read(Node{NodeKind::DequantF32, last}, 0, 4096, out.data()), IoError);
    // What lies before the cut is still served.
    if (first.offset + first.nbytes <= tensor.offset) {
        BOOST_TEST(files.mapped(first.file, first.offset, first.nbytes) != nullptr);
        BOOST_TEST(content.read(Node{NodeKind::Raw, 0}, 0, first.nbytes, out.data()) == first.nbytes);
    }
}

BOOST_AUTO_TEST_SUITE_END()
