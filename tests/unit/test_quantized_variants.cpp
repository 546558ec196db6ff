// Every SIMD variant of the quantized kernels (tensorfs/quantized_kernels.hpp) that this CPU runs, against the
// portable kernels (which test_quantized_formulas.cpp checks against the formulas), bit for bit, NaN payloads
// included: random rows of every length up to 100 and a few longer ones; FP8 bytes with many NaN codes; scales that
// include NaNs (quiet and signalling, both signs), infinities, zeros and subnormals; MXFP4 exponents 0, 1, 254 and
// 255 among ordinary ones; zero points at the ends of int32; blocks and groups that divide the row, that do not, and
// that are shorter than a register. Inputs alternately end right before an inaccessible page and start off their
// alignment (packed bytes and words at any byte); outputs sit between canaries. A variant this CPU lacks cannot run
// here: the test says so.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "quantized_checks.hpp"
#include "tensorfs/quantized_kernels.hpp"

using namespace tensorfs;
using test::from_bits;

namespace {

// The row lengths tried: every one up to 100, and longer ones around powers of two.
std::vector<std::size_t> row_lengths() {
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n <= 100; ++n) lengths.push_back(n);
    for (const std::size_t n : {255, 256, 257, 1000, 4099}) lengths.push_back(n);
    return lengths;
}

// FP8 block and group sizes: shorter than a register, around one, longer, and the whole row.
std::vector<std::size_t> group_sizes(std::size_t n) {
    return {1, 3, 5, 8, 15, 16, 17, 24, 32, 128, std::max<std::size_t>(n, 1)};
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// The parts of a case's name, one after the other.
template <class... Parts>
std::string named(const Parts&... parts) {
    std::ostringstream name;
    (name << ... << parts);
    return name.str();
}

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& values) {
    std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
    if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

// Room for one input of a case, reused from case to case: a mapping whose usable bytes end right before an
// inaccessible page.
class Arena {
public:
    static constexpr std::size_t kCapacity = std::size_t{128} << 10;  // whole pages

    Arena() : page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {
        void* mapping = mmap(nullptr, kCapacity + page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        BOOST_REQUIRE(mapping != MAP_FAILED);
        base_ = static_cast<std::uint8_t*>(mapping);
        BOOST_REQUIRE(mprotect(base_ + kCapacity, page_, PROT_NONE) == 0);
    }
    ~Arena() { munmap(base_, kCapacity + page_); }
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;

    // Copies `bytes` so that they end right before the inaccessible page (`guarded`), or start `skew` bytes past a
    // page boundary, and returns where they start.
    const std::uint8_t* put(const std::vector<std::uint8_t>& bytes, bool guarded, std::size_t skew) {
        BOOST_REQUIRE(bytes.size() + skew <= kCapacity);
        std::uint8_t* at = guarded ? base_ + kCapacity - bytes.size() : base_ + skew;
        if (!bytes.empty()) std::memcpy(at, bytes.data(), bytes.size());
        return at;
    }

private:
    std::size_t page_;
    std::uint8_t* base_ = nullptr;
};

// Random inputs, and where the next case puts them: odd cases end them right before an inaccessible page (a kernel
// that reads past its input crashes), even ones start them off their alignment (bytes and words by any number of
// bytes, floats and int32 by whole elements). A case's inputs stay where they are until the next case.
class Inputs {
public:
    explicit Inputs(unsigned seed) : random_(seed) {}

    void next_case() {
        ++case_;
        placed_ = 0;
    }

    template <class T>
    const T* place(const std::vector<T>& values) {
        BOOST_REQUIRE(placed_ < arenas_.size());
        const bool guarded = case_ % 2 == 1;
        const std::size_t skew = sizeof(T) == 1 || std::is_same_v<T, std::uint32_t> ? (case_ / 2) % 64
                                                                                    : sizeof(T) * ((case_ / 2) % 16);
        return reinterpret_cast<const T*>(arenas_[placed_++].put(bytes_of(values), guarded, skew));
    }

    std::vector<std::uint8_t> bytes(std::size_t count) { return fill<std::uint8_t>(count, [&] { return byte(); }); }

    // FP8 bytes, a quarter of them NaN codes in every other case.
    std::vector<std::uint8_t> fp8_bytes(std::size_t count) {
        const bool nan_rich = case_ % 4 < 2;
        return fill<std::uint8_t>(count, [&] {
            return nan_rich && random_() % 4 == 0 ? static_cast<std::uint8_t>(random_() % 2 == 0 ? 0x7F : 0xFF)
                                                  : byte();
        });
    }

    std::vector<std::uint32_t> words(std::size_t count) {
        return fill<std::uint32_t>(count, [&] { return static_cast<std::uint32_t>(random_()); });
    }

    // Mostly ordinary floats of many magnitudes; one in four a special value.
    std::vector<float> scales(std::size_t count) {
        static constexpr std::uint32_t kSpecial[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                                     0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0xFFA12345u,
                                                     0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu, 0x3F800000u};
        return fill<float>(count, [&] {
            if (random_() % 4 == 0) return from_bits(kSpecial[random_() % std::size(kSpecial)]);
            const std::uint32_t sign = random_() % 2 == 0 ? 0u : 0x80000000u;
            const std::uint32_t exponent = 90 + random_() % 70;  // 2^-37 .. 2^32
            return from_bits(sign | exponent << 23 | (static_cast<std::uint32_t>(random_()) & 0x7FFFFFu));
        });
    }

    // Mostly small zero points, above and below the fields; one in eight at or near the ends of int32.
    std::vector<std::int32_t> zeros(std::size_t count) {
        static constexpr std::int32_t kExtreme[] = {INT32_MIN,       INT32_MIN + 1, INT32_MIN + 255,
                                                    INT32_MIN + 256, INT32_MAX,     -1, 0};
        return fill<std::int32_t>(count, [&] {
            if (random_() % 8 == 0) return kExtreme[random_() % std::size(kExtreme)];
            return static_cast<std::int32_t>(random_() % 300) - 20;
        });
    }

    // MXFP4 exponents: one in four 0, 1, 254 or 255, the others around 127.
    std::vector<std::uint8_t> exponents(std::size_t count) {
        static constexpr std::uint8_t kEdges[] = {0, 1, 254, 255};
        return fill<std::uint8_t>(count, [&] {
            return random_() % 4 == 0 ? kEdges[random_() % 4] : static_cast<std::uint8_t>(100 + random_() % 50);
        });
    }

    std::vector<float> any_floats(std::size_t count) {
        return fill<float>(count, [&] { return from_bits(static_cast<std::uint32_t>(random_())); });
    }

private:
    template <class T, class Make>
    std::vector<T> fill(std::size_t count, Make make) {
        std::vector<T> values(count);
        for (T& value : values) value = make();
        return values;
    }
    std::uint8_t byte() { return static_cast<std::uint8_t>(random_()); }

    std::mt19937 random_;
    unsigned case_ = 0;
    std::array<Arena, 4> arenas_;
    std::size_t placed_ = 0;
};

// The variants besides the portable one that this CPU runs.
std::vector<const QuantizedKernels*> simd_variants_here() {
    std::vector<const QuantizedKernels*> variants;
    for (const QuantizedKernels& variant : quantized_kernel_variants().subspan(1)) {
        if (variant.cpu_supports()) variants.push_back(&variant);
    }
    return variants;
}

// Runs `run` with the portable kernels and with every SIMD variant here, each into a fenced output of `n` values,
// and checks that they all give the same bits.
void check_agree(std::size_t n, const std::string& what,
                 const std::function<void(const QuantizedKernels&, float*)>& run) {
    const QuantizedKernels& portable = quantized_kernel_variants().front();
    const auto expected = test::fenced_output(n, [&](float* out) { run(portable, out); }, what + " [portable]");
    for (const QuantizedKernels* variant : simd_variants_here()) {
        const std::string label = what + " [" + std::string(variant->name) + "]";
        const auto actual = test::fenced_output(n, [&](float* out) { run(*variant, out); }, label);
        test::check_same_bits(expected, actual, label);
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(quantized_variants)

BOOST_AUTO_TEST_CASE(variants_this_cpu_runs) {
    for (const QuantizedKernels& variant : quantized_kernel_variants().subspan(1)) {
        BOOST_TEST_MESSAGE(variant.name << (variant.cpu_supports() ? ": checked against portable"
                                                                   : ": this CPU cannot run it; not checked here"));
    }
    BOOST_TEST(quantized_kernel_variants().front().cpu_supports());
}

BOOST_AUTO_TEST_CASE(fp8_e4m3_scaled) {
    Inputs inputs(1);
    for (const std::size_t n : row_lengths()) {
        for (const std::size_t block : group_sizes(n)) {
            inputs.next_case();
            const auto* w = inputs.place(inputs.fp8_bytes(n));
            const auto* scales = inputs.place(inputs.scales(ceil_div(n, block)));
            check_agree(n, named("n ", n, ", block ", block), [&](const QuantizedKernels& k, float* out) {
                k.fp8_e4m3_scaled(w, n, scales, block, out);
            });
        }
    }
}

BOOST_AUTO_TEST_CASE(nvfp4_and_mxfp4_scaled) {
    Inputs inputs(2);
    for (const std::size_t odd_or_even : row_lengths()) {
        const std::size_t n = odd_or_even / 2 * 2;
        inputs.next_case();
        const auto* packed = inputs.place(inputs.bytes(n / 2));
        const auto* scales = inputs.place(inputs.scales(ceil_div(n, 16)));
        const auto* exponents = inputs.place(inputs.exponents(ceil_div(n, 32)));
        check_agree(n, named("nvfp4, n ", n), [&](const QuantizedKernels& k, float* out) {
            k.nvfp4_scaled(packed, n, scales, out);
        });
        check_agree(n, named("mxfp4, n ", n), [&](const QuantizedKernels& k, float* out) {
            k.mxfp4_scaled(packed, n, exponents, out);
        });
    }
}

BOOST_AUTO_TEST_CASE(packed_along_row) {
    Inputs inputs(3);
    for (const unsigned bits : {2u, 4u, 8u}) {
        for (const std::size_t n : row_lengths()) {
            for (const std::size_t group : group_sizes(n)) {
                inputs.next_case();
                const auto* words = inputs.place(inputs.words(ceil_div(n, 32 / bits)));
                const auto* zeros = inputs.place(inputs.zeros(ceil_div(n, group)));
                const auto* scales = inputs.place(inputs.scales(ceil_div(n, group)));
                check_agree(n, named(bits, " bits, n ", n, ", group ", group),
                            [&](const QuantizedKernels& k, float* out) {
                                k.packed_along_row(words, n, bits, zeros, scales, group, out);
                            });
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(field_of_words_and_awq_row) {
    Inputs inputs(4);
    struct Field {
        unsigned shift, bits;
    };
    constexpr Field kFields[] = {{0, 4}, {12, 4}, {28, 4}, {24, 8}, {30, 2}, {29, 3}, {0, 1}, {31, 1}};
    for (const std::size_t n : row_lengths()) {
        inputs.next_case();
        const auto* words = inputs.place(inputs.words(n));
        const auto* zeros = inputs.place(inputs.zeros(n));
        const auto* scales = inputs.place(inputs.scales(n));
        for (const Field field : kFields) {
            check_agree(n, named("field at ", field.shift, " of ", field.bits, " bits, n ", n),
                        [&](const QuantizedKernels& k, float* out) {
                            k.field_of_words(words, n, field.shift, field.bits, zeros, scales, out);
                        });
        }
        const auto* awq_words = inputs.place(inputs.words(ceil_div(n, 8)));
        check_agree(n, named("awq, n ", n), [&](const QuantizedKernels& k, float* out) {
            k.awq_row(awq_words, n, zeros, scales, out);
        });
    }
}

BOOST_AUTO_TEST_CASE(transpose) {
    Inputs inputs(5);
    struct Shape {
        std::size_t rows, cols;
    };
    std::vector<Shape> shapes = {{100, 130}, {257, 33}, {16, 1000}, {1000, 16}};
    for (std::size_t rows = 0; rows <= 40; ++rows) {
        for (std::size_t cols = 0; cols <= 40; cols += rows % 3 + 1) shapes.push_back({rows, cols});
    }
    for (const Shape shape : shapes) {
        // Into rows of exactly `rows` values, and into wider ones (a tile of a larger matrix).
        for (const std::size_t stride : {shape.rows, shape.rows + 5}) {
            inputs.next_case();
            const auto* src = inputs.place(inputs.any_floats(shape.rows * shape.cols));
            const std::size_t written = shape.cols == 0 ? 0 : (shape.cols - 1) * stride + shape.rows;
            check_agree(written, named(shape.rows, " x ", shape.cols, " into rows of ", stride),
                        [&](const QuantizedKernels& k, float* out) {
                            k.transpose(src, shape.rows, shape.cols, out, stride);
                        });
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
