// The gather of strided views: every element in C order for random shapes, strides (zero and permuted ones
// included), element sizes and ranges, against a plain per-element gather; and how few reads it takes.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <random>

#include "vfs/stored_blocks.hpp"

using namespace tensorfs;

namespace {

struct Layout {
    std::vector<std::uint64_t> shape;
    std::vector<std::uint64_t> stride;
};

std::uint64_t elements_of(const Layout& layout) {
    std::uint64_t n = 1;
    for (const auto d : layout.shape) n *= d;
    return n;
}

// The position of C-order element `index`, one element at a time: the reference.
std::uint64_t position_of(const Layout& layout, std::uint64_t index) {
    std::uint64_t position = 0;
    for (std::size_t d = layout.shape.size(); d-- > 0;) {
        position += index % layout.shape[d] * layout.stride[d];
        index /= layout.shape[d];
    }
    return position;
}

// Reads from a buffer, counting reads and bytes.
struct CountingSource {
    std::vector<std::uint8_t> bytes;
    std::size_t reads = 0;
    std::uint64_t read_bytes = 0;
    ReadRaw reader() {
        return [this](std::uint64_t offset, std::size_t length, void* dst) {
            BOOST_REQUIRE(offset + length <= bytes.size());
            std::memcpy(dst, bytes.data() + offset, length);
            ++reads;
            read_bytes += length;
        };
    }
};

CountingSource source_for(const Layout& layout, std::size_t element, std::mt19937_64& random) {
    std::uint64_t last = 0;
    for (std::size_t d = 0; d < layout.shape.size(); ++d) last += (layout.shape[d] - 1) * layout.stride[d];
    CountingSource source;
    source.bytes.resize((last + 1) * element);
    for (auto& byte : source.bytes) byte = static_cast<std::uint8_t>(random());
    return source;
}

void check_gather(const Layout& layout, std::size_t element, std::uint64_t first, std::uint64_t count,
                  std::mt19937_64& random) {
    CountingSource source = source_for(layout, element, random);
    std::vector<std::uint8_t> gathered(count * element, 0xEE), expected(count * element);
    for (std::uint64_t i = 0; i < count; ++i) {
        std::memcpy(expected.data() + i * element, source.bytes.data() + position_of(layout, first + i) * element,
                    element);
    }
    gather_strided(layout.shape, layout.stride, element, first, count, source.reader(), gathered.data());
    BOOST_TEST(gathered == expected);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(stored_blocks)

BOOST_AUTO_TEST_CASE(random_layouts_and_ranges_match_a_per_element_gather) {
    std::mt19937_64 random(12345);
    for (int round = 0; round < 3000; ++round) {
        Layout layout;
        const std::size_t dims = 1 + random() % 4;
        for (std::size_t d = 0; d < dims; ++d) layout.shape.push_back(1 + random() % 6);
        // Strides: a permutation of C-order strides, sometimes spread out, sometimes zero (an expanded view).
        std::vector<std::size_t> order(dims);
        for (std::size_t d = 0; d < dims; ++d) order[d] = d;
        std::shuffle(order.begin(), order.end(), random);
        layout.stride.assign(dims, 0);
        std::uint64_t step = 1 + random() % 2;
        for (const std::size_t d : order) {
            layout.stride[d] = random() % 5 == 0 ? 0 : step;
            step *= layout.shape[d] + random() % 3;
        }
        const std::size_t element = std::size_t{1} << (random() % 5);  // 1 to 16 bytes
        const std::uint64_t total = elements_of(layout);
        const std::uint64_t first = random() % total;
        const std::uint64_t count = 1 + random() % (total - first);
        BOOST_TEST_CONTEXT("round " << round) { check_gather(layout, element, first, count, random); }
    }
}

BOOST_AUTO_TEST_CASE(transposed_matrix_reads_nearby_columns_together) {
    std::mt19937_64 random(7);
    // A 256 x 256 float32 matrix read transposed: four rows of the view are four columns of the matrix, 16 bytes in
    // each of its rows; rows 1 KiB apart are near enough to be read in one go.
    const Layout small{{256, 256}, {1, 256}};
    CountingSource near = source_for(small, 4, random);
    std::vector<std::uint8_t> out(4 * 256 * 4);
    gather_strided(small.shape, small.stride, 4, 0, 4 * 256, near.reader(), out.data());
    BOOST_TEST(near.reads == 1u);
    // With rows 16 KiB apart, each row's 16 bytes are read alone: no more bytes than needed.
    const Layout wide{{4096, 4096}, {1, 4096}};
    CountingSource far;
    far.bytes.resize(4096u * 4096 * 4);
    std::vector<std::uint8_t> wide_out(4 * 4096 * 4);
    gather_strided(wide.shape, wide.stride, 4, 4 * 4096, 4 * 4096, far.reader(), wide_out.data());
    BOOST_TEST(far.reads == 4096u);
    BOOST_TEST(far.read_bytes == 4096u * 16);
}

BOOST_AUTO_TEST_CASE(a_permuted_contiguous_block_is_one_read) {
    std::mt19937_64 random(9);
    // A channels_last convolution weight: (out, in, h, w) stored as (out, h, w, in).
    const Layout conv{{8, 16, 3, 3}, {16 * 9, 1, 3 * 16, 16}};
    CountingSource source = source_for(conv, 2, random);
    std::vector<std::uint8_t> out(elements_of(conv) * 2);
    gather_strided(conv.shape, conv.stride, 2, 0, elements_of(conv), source.reader(), out.data());
    BOOST_TEST(source.reads == 1u);
    check_gather(conv, 2, 0, elements_of(conv), random);
}

BOOST_AUTO_TEST_SUITE_END()
