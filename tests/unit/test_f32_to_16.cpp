// float32 -> bfloat16 / float16 (tensorfs/f32_to_16.hpp): the portable conversions round to the nearest value,
// ties to even, checked against exact double arithmetic on every float32 near a rounding boundary; they give back
// every 16-bit value exactly; NaNs come out as PyTorch and numpy make them; and every SIMD variant this CPU runs
// equals the portable code bit for bit, at every length and alignment. (The integration test test_views.py
// compares the mounted files with PyTorch and numpy themselves.)
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "dequant/half.hpp"
#include "tensorfs/f32_to_16.hpp"

using namespace tensorfs;

namespace {

float from_bits(std::uint32_t bits) { return std::bit_cast<float>(bits); }

// Every float32 whose dropped low bits sit at or next to a rounding boundary of a 16-bit format, for every sign,
// exponent and kept mantissa: bf16 keeps the top 16 bits, f16 (normal range) the top 19.
std::vector<float> boundary_values() {
    std::vector<float> values;
    for (std::uint32_t high = 0; high < 0x10000; ++high) {
        for (const std::uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
            values.push_back(from_bits(high << 16 | low));
        }
    }
    for (std::uint32_t kept = 0; kept < (1u << 19); ++kept) {
        for (const std::uint32_t low : {0x0000u, 0x0001u, 0x0FFFu, 0x1000u, 0x1001u, 0x1FFFu}) {
            values.push_back(from_bits(kept << 13 | low));
        }
    }
    // Values whose float16 is subnormal round at bit 126 - exponent of the significand.
    for (std::uint32_t exponent = 101; exponent <= 113; ++exponent) {
        const std::uint32_t shift = 126 - exponent;
        for (std::uint32_t kept = 0; kept <= (0xFFFFFFu >> shift); ++kept) {
            for (const std::int64_t delta : {-1, 0, 1}) {
                const std::int64_t half_way = (std::int64_t{kept} << shift) + (std::int64_t{1} << (shift - 1));
                const std::int64_t significand = half_way + delta;
                if (significand < 0x800000 || significand > 0xFFFFFF) continue;
                const auto bits = exponent << 23 | (static_cast<std::uint32_t>(significand) & 0x7FFFFFu);
                values.push_back(from_bits(bits));
                values.push_back(from_bits(bits | 0x80000000u));
            }
        }
    }
    return values;
}

// A 16-bit format: what a (non-NaN) pattern is worth, exactly, as a double.
struct Format {
    double (*value)(std::uint16_t);
    std::uint16_t infinity;   // positive
    double overflow_step;     // the next value above the largest finite one, were the exponent unbounded
};
double bf16_value(std::uint16_t h) { return bf16_to_f32(h); }
double f16_value(std::uint16_t h) { return f16_to_f32(h); }
const Format kBf16{bf16_value, 0x7F80, std::ldexp(1.0, 128)};
const Format kF16{f16_value, 0x7C00, 65536.0};

// Whether `h` is the nearest value of `format` to the finite `x`, ties to an even mantissa, overflow to infinity as
// IEEE 754 rounds it (as if the exponent went on: a value closer to overflow_step is infinity).
bool is_nearest(const Format& format, float x, std::uint16_t h) {
    const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    if ((h & 0x8000) != sign) return false;
    const double magnitude = std::fabs(static_cast<double>(x));
    const std::uint16_t m = h & 0x7FFF;
    auto value_of = [&](std::uint16_t pattern) {
        return pattern == format.infinity ? format.overflow_step : format.value(pattern);
    };
    const double chosen = value_of(m);
    const double distance = std::fabs(magnitude - chosen);
    bool ok = m <= format.infinity;
    if (ok && m < format.infinity) {
        const double above = std::fabs(value_of(m + 1) - magnitude);
        ok = distance < above || (distance == above && (m & 1) == 0);
    }
    if (ok && m > 0) {
        const double below = std::fabs(magnitude - value_of(m - 1));
        ok = distance < below || (distance == below && (m & 1) == 0);
    }
    return ok;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(f32_to_16)

BOOST_AUTO_TEST_CASE(portable_rounding_is_nearest_even_near_every_boundary) {
    std::size_t checked = 0;
    for (const float x : boundary_values()) {
        if (std::isnan(x)) continue;
        for (const auto& [format, h] : {std::pair{&kBf16, bf16_from_f32(x)}, std::pair{&kF16, f16_from_f32(x)}}) {
            if (!is_nearest(*format, x, h)) {
                BOOST_FAIL("float32 0x" << std::hex << std::bit_cast<std::uint32_t>(x) << " gave 0x" << h);
            }
        }
        ++checked;
    }
    BOOST_TEST(checked > 3'000'000u);
}

BOOST_AUTO_TEST_CASE(every_16_bit_value_comes_back_exactly) {
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const auto pattern = static_cast<std::uint16_t>(h);
        const bool bf16_nan = (h & 0x7FFF) > 0x7F80;
        BOOST_TEST_CONTEXT("pattern 0x" << std::hex << h) {
            BOOST_TEST(bf16_from_f32(bf16_to_f32(pattern)) == (bf16_nan ? 0x7FC0 : pattern));
            // A float16 NaN widened to float32 is made quiet (bit 9 set); numpy's narrowing keeps that.
            const bool f16_nan = (h & 0x7FFF) > 0x7C00;
            BOOST_TEST(f16_from_f32(f16_to_f32(pattern)) == (f16_nan ? (pattern | 0x0200) : pattern));
        }
    }
}

BOOST_AUTO_TEST_CASE(nans_infinities_and_extremes) {
    // PyTorch's c10::BFloat16: every NaN is 0x7FC0, whatever its sign and payload.
    for (const std::uint32_t nan : {0x7F800001u, 0xFF800001u, 0x7FC00000u, 0xFFC00000u, 0x7FFFFFFFu, 0x7F810000u}) {
        BOOST_TEST(bf16_from_f32(from_bits(nan)) == 0x7FC0);
    }
    // numpy: sign and the top 10 payload bits kept, not made quiet; a payload lost entirely becomes 1.
    BOOST_TEST(f16_from_f32(from_bits(0x7F800001u)) == 0x7C01);
    BOOST_TEST(f16_from_f32(from_bits(0xFF800001u)) == 0xFC01);
    BOOST_TEST(f16_from_f32(from_bits(0x7FA00000u)) == 0x7D00);
    BOOST_TEST(f16_from_f32(from_bits(0xFFC00000u)) == 0xFE00);
    BOOST_TEST(f16_from_f32(from_bits(0x7FFFFFFFu)) == 0x7FFF);
    BOOST_TEST(bf16_from_f32(INFINITY) == 0x7F80);
    BOOST_TEST(bf16_from_f32(-INFINITY) == 0xFF80);
    BOOST_TEST(f16_from_f32(INFINITY) == 0x7C00);
    BOOST_TEST(f16_from_f32(-INFINITY) == 0xFC00);
    BOOST_TEST(f16_from_f32(65519.996f) == 0x7BFF);
    BOOST_TEST(f16_from_f32(65520.0f) == 0x7C00);
    BOOST_TEST(f16_from_f32(-1e30f) == 0xFC00);
    BOOST_TEST(bf16_from_f32(from_bits(0x7F7FFFFFu)) == 0x7F80);   // the largest float32 rounds up to infinity
    BOOST_TEST(bf16_from_f32(from_bits(0x007FFFFFu)) == 0x0080);   // a subnormal rounds up to the smallest normal
    BOOST_TEST(bf16_from_f32(from_bits(0x00000001u)) == 0x0000);
    BOOST_TEST(f16_from_f32(std::ldexp(1.0f, -25)) == 0x0000);      // the tie between 0 and 2^-24: to even
    BOOST_TEST(f16_from_f32(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
    BOOST_TEST(f16_from_f32(std::ldexp(3.0f, -25)) == 0x0002);      // 1.5 x 2^-24: to even, 2
    BOOST_TEST(f16_from_f32(-0.0f) == 0x8000);
    BOOST_TEST(bf16_from_f32(-0.0f) == 0x8000);
}

BOOST_AUTO_TEST_CASE(every_simd_variant_equals_the_portable_code) {
    std::vector<float> inputs = boundary_values();
    std::mt19937 random(7);
    for (int i = 0; i < 1 << 20; ++i) inputs.push_back(from_bits(static_cast<std::uint32_t>(random())));
    // Groups full of NaNs, subnormals and zeros next to plain values, so that every special road is taken.
    for (const std::uint32_t special : {0x7F800001u, 0xFFC12345u, 0x00000001u, 0x807FFFFFu, 0u, 0x80000000u}) {
        for (int i = 0; i < 64; ++i) inputs.push_back(i % 3 == 0 ? from_bits(special) : 1.0f + i);
    }
    std::vector<std::uint16_t> expected_bf16(inputs.size()), expected_f16(inputs.size());
    narrow_variants()[0].bf16(inputs.data(), inputs.size(), expected_bf16.data());
    narrow_variants()[0].f16(inputs.data(), inputs.size(), expected_f16.data());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        differing += expected_bf16[i] != bf16_from_f32(inputs[i]) || expected_f16[i] != f16_from_f32(inputs[i]);
    }
    BOOST_REQUIRE(differing == 0u);

    for (const NarrowVariant& variant : narrow_variants()) {
        if (!variant.cpu_supports()) {
            BOOST_TEST_MESSAGE("this CPU does not run the " << variant.name << " conversions; not checked here");
            continue;
        }
        BOOST_TEST_CONTEXT(variant.name) {
            std::vector<std::uint16_t> got(inputs.size());
            variant.bf16(inputs.data(), inputs.size(), got.data());
            BOOST_TEST(got == expected_bf16);
            variant.f16(inputs.data(), inputs.size(), got.data());
            BOOST_TEST(got == expected_f16);
            // Every length up to 70 from misaligned buffers, with guards that must stay untouched.
            for (std::size_t count = 0; count <= 70; ++count) {
                std::vector<float> src(count + 1);
                std::memcpy(src.data() + 1, inputs.data() + 1000 + count, count * sizeof(float));
                for (const NarrowKernel kernel : {variant.bf16, variant.f16}) {
                    std::vector<std::uint16_t> dst(count + 3, 0xABCD);
                    kernel(src.data() + 1, count, dst.data() + 1);
                    const auto& expected = kernel == variant.bf16 ? expected_bf16 : expected_f16;
                    BOOST_TEST(dst.front() == 0xABCD);
                    BOOST_TEST(dst[count + 1] == 0xABCD);
                    BOOST_TEST(std::equal(dst.begin() + 1, dst.begin() + 1 + count, expected.begin() + 1000 + count));
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(active_kernels_are_the_widest_the_cpu_runs) {
    NarrowKernel widest_bf16 = nullptr;
    for (const NarrowVariant& variant : narrow_variants()) {
        if (variant.cpu_supports()) widest_bf16 = variant.bf16;
    }
    BOOST_TEST((active_bf16_kernel() == widest_bf16));
    BOOST_TEST_MESSAGE("active 16-bit conversions: " << [] {
        std::string name;
        for (const NarrowVariant& variant : narrow_variants()) {
            if (variant.cpu_supports()) name = variant.name;
        }
        return name;
    }());
}

BOOST_AUTO_TEST_SUITE_END()
