// The portable quantized kernels (tensorfs/quantized_kernels.hpp) against values worked out by hand from each
// scheme's formula: FP8 E4M3 codes times block scales (zeros, subnormals, the largest, NaN codes and NaN scales,
// every one of the 256 codes); E2M1 nibbles (-0.0 included) times NVFP4 scales and MXFP4 exponents 0, 1, 126,
// 127, 254 and 255 (subnormal, overflowing and NaN groups); integers of 2, 4 and 8 bits packed along the row, with
// zero points above them, extreme ones, and groups that do not divide the row; GPTQ's fields of words; AWQ's
// order; transposes. Row lengths are not multiples of 8. test_quantized_variants.cpp compares the SIMD paths with
// these kernels.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "quantized_checks.hpp"
#include "tensorfs/dtype.hpp"
#include "tensorfs/quantized_kernels.hpp"

using namespace tensorfs;
using test::check_output;
using test::from_bits;

namespace {

const QuantizedKernels& portable() { return quantized_kernel_variants().front(); }

constexpr std::uint32_t kQuietNan = 0x7FC00000u;
constexpr std::uint32_t kNegativeQuietNan = 0xFFC00000u;

// The E2M1 value of a nibble, from the OCP MX definition (bias 1, one mantissa bit, exponent 0 subnormal).
double e2m1(unsigned nibble) {
    const int exponent = static_cast<int>((nibble >> 1) & 3), mantissa = static_cast<int>(nibble & 1);
    const double magnitude = exponent == 0 ? 0.5 * mantissa : std::ldexp(1.0 + 0.5 * mantissa, exponent - 1);
    return (nibble & 8) != 0 ? -magnitude : magnitude;
}

// The E4M3 value of a byte (bias 7, 3 mantissa bits, exponent 0 subnormal), or NaN for S.1111.111.
double e4m3(unsigned byte) {
    const int exponent = static_cast<int>((byte >> 3) & 15), mantissa = static_cast<int>(byte & 7);
    if ((byte & 0x7F) == 0x7F) return std::numeric_limits<double>::quiet_NaN();
    const double magnitude = exponent == 0 ? std::ldexp(mantissa, -9) : std::ldexp(8 + mantissa, exponent - 10);
    return (byte & 0x80) != 0 ? -magnitude : magnitude;
}

// Packs `q` along a row as compressed-tensors does: 32 / bits values a word, the first in the lowest bits.
std::vector<std::uint32_t> pack_along(const std::vector<std::uint32_t>& q, unsigned bits) {
    const unsigned per = 32 / bits;
    std::vector<std::uint32_t> words((q.size() + per - 1) / per);
    for (std::size_t c = 0; c < q.size(); ++c) words[c / per] |= q[c] << (bits * (c % per));
    return words;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(quantized_formulas)

BOOST_AUTO_TEST_CASE(variants_are_the_kernel_paths_and_the_active_one_is_the_active_path) {
    const auto variants = quantized_kernel_variants();
    BOOST_REQUIRE_EQUAL(variants.size(), 3u);
    for (const KernelPath path : {KernelPath::portable, KernelPath::avx2, KernelPath::avx512}) {
        const QuantizedKernels& variant = variants[static_cast<std::size_t>(path)];
        BOOST_TEST(variant.name == kernel_path_name(path));
        // The path kernel_path.cpp picks for this CPU must be one whose quantized kernels it runs.
        if (path <= cpu_kernel_path()) BOOST_CHECK_MESSAGE(variant.cpu_supports(), variant.name << " cannot run");
    }
    BOOST_TEST(&active_quantized_kernels() == &variants[static_cast<std::size_t>(active_kernel_path())]);
}

BOOST_AUTO_TEST_CASE(fp8_e4m3_times_block_scales) {
    // Blocks of 4, the last one short: zeros and +-1; the smallest and largest subnormals and the smallest normal;
    // the largest value (448) and the NaN codes; 2, 1.5, a normal and a subnormal; 448 again.
    const std::vector<std::uint8_t> w = {0x00, 0x80, 0x38, 0xB8,  //
                                         0x01, 0x81, 0x07, 0x08,  //
                                         0x7E, 0xFE, 0x7F, 0xFF,  //
                                         0x40, 0x3C, 0x08, 0x01,  //
                                         0x7E};
    const std::vector<float> scales = {2.0f, -0.5f, 0.25f, 3.0f, 1e37f};
    const std::vector<float> expected = {0.0f, -0.0f, 2.0f, -2.0f,                                       //
                                         -0x1p-10f, 0x1p-10f, -7 * 0x1p-10f, -0x1p-7f,                  //
                                         112.0f, -112.0f, from_bits(kQuietNan), from_bits(kNegativeQuietNan),
                                         6.0f, 4.5f, 0x1.8p-5f, 0x1.8p-8f,                              //
                                         std::numeric_limits<float>::infinity()};  // 448e37 overflows
    check_output(expected, "fp8, blocks of 4",
                 [&](float* out) { portable().fp8_e4m3_scaled(w.data(), w.size(), scales.data(), 4, out); });
}

BOOST_AUTO_TEST_CASE(fp8_e4m3_nan_codes_keep_their_nan_and_nan_scales_give_theirs) {
    const std::vector<std::uint8_t> w = {0x38, 0x7F, 0xFF, 0x00};
    for (const std::uint32_t scale : {0x7F812345u, 0xFFC00001u, 0x7FC00000u}) {
        const std::vector<float> scales = {from_bits(scale)};
        // A number times a NaN scale is that NaN, made quiet (bit 22 set); a NaN code stays its own NaN.
        const float scale_nan = from_bits(scale | 0x00400000u);
        check_output({scale_nan, from_bits(kQuietNan), from_bits(kNegativeQuietNan), scale_nan},
                     "fp8, NaN scale " + std::to_string(scale),
                     [&](float* out) { portable().fp8_e4m3_scaled(w.data(), 4, scales.data(), 4, out); });
    }
    // Zero times infinity is x86's default NaN.
    const std::vector<float> infinite = {std::numeric_limits<float>::infinity()};
    check_output({from_bits(0xFFC00000u)}, "fp8, zero times infinity",
                 [&](float* out) { portable().fp8_e4m3_scaled(w.data() + 3, 1, infinite.data(), 1, out); });
}

BOOST_AUTO_TEST_CASE(fp8_e4m3_every_code) {
    std::vector<std::uint8_t> w(256);
    for (unsigned b = 0; b < 256; ++b) w[b] = static_cast<std::uint8_t>(b);
    // Blocks of 100 (the last one short), scales whose products with every code are exact.
    const std::vector<float> scales = {1.0f, -0.75f, 0x1p-20f};
    std::vector<float> expected(256);
    for (unsigned b = 0; b < 256; ++b) {
        const double value = e4m3(b);
        expected[b] = std::isnan(value) ? from_bits((b & 0x80) != 0 ? kNegativeQuietNan : kQuietNan)
                                        : static_cast<float>(value * scales[b / 100]);
    }
    check_output(expected, "fp8, every code",
                 [&](float* out) { portable().fp8_e4m3_scaled(w.data(), 256, scales.data(), 100, out); });
}

BOOST_AUTO_TEST_CASE(nvfp4_nibbles_times_group_scales) {
    // Nibbles 0 .. 15 in order (low nibble first), then 7 and 8 (-0.0) in a short second group: n = 18.
    const std::vector<std::uint8_t> packed = {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE, 0x87};
    const std::vector<float> scales = {0.5f, -3.0f};
    const std::vector<float> expected = {0.0f,  0.25f,  0.5f,  0.75f,  1.0f,  1.5f,  2.0f,  3.0f,
                                         -0.0f, -0.25f, -0.5f, -0.75f, -1.0f, -1.5f, -2.0f, -3.0f,
                                         -18.0f, 0.0f};  // 6 * -3, -0.0 * -3
    check_output(expected, "nvfp4",
                 [&](float* out) { portable().nvfp4_scaled(packed.data(), 18, scales.data(), out); });
}

BOOST_AUTO_TEST_CASE(mxfp4_nibbles_times_powers_of_two) {
    // Seven groups: exponents 0, 1, 126, 127, 254, 255, then 127 for a short group of 4 values. Every group holds
    // the 16 nibbles twice.
    const std::vector<std::uint8_t> exponents = {0, 1, 126, 127, 254, 255, 127};
    const std::size_t n = 6 * 32 + 4;
    std::vector<std::uint8_t> packed;
    for (std::size_t byte = 0; byte < n / 2; ++byte) {
        const unsigned low = (2 * byte) % 16;
        packed.push_back(static_cast<std::uint8_t>(low | (low + 1) << 4));
    }
    std::vector<float> expected(n);
    for (std::size_t c = 0; c < n; ++c) {
        const int e = exponents[c / 32];
        // ldexp in double is exact; the conversion to float rounds nothing but overflow (to infinity).
        expected[c] = e == 255 ? from_bits(kQuietNan) : static_cast<float>(std::ldexp(e2m1(c % 16), e - 127));
    }
    // A few of them by hand: 0.5 and 6 times 2^-127, float32 subnormal and normal; 1.5 * 2^127, the largest value
    // that stays finite; 2 * 2^127 and beyond overflow; -0.0 stays -0.0.
    BOOST_TEST(std::bit_cast<std::uint32_t>(expected[1]) == 0x00200000u);
    BOOST_TEST(std::bit_cast<std::uint32_t>(expected[7]) == 0x01400000u);
    BOOST_TEST(std::bit_cast<std::uint32_t>(expected[128 + 3]) == 0x7F400000u);
    BOOST_TEST(std::bit_cast<std::uint32_t>(expected[128 + 4]) == 0x7F800000u);
    BOOST_TEST(std::bit_cast<std::uint32_t>(expected[128 + 15]) == 0xFF800000u);
    BOOST_TEST(std::bit_cast<std::uint32_t>(expected[128 + 8]) == 0x80000000u);
    BOOST_TEST(expected[64 + 7] == 3.0f);
    BOOST_TEST(expected[96 + 7] == 6.0f);
    check_output(expected, "mxfp4",
                 [&](float* out) { portable().mxfp4_scaled(packed.data(), n, exponents.data(), out); });
}

BOOST_AUTO_TEST_CASE(packed_along_row_by_hand) {
    {
        // 4 bits: q = 0 .. 15, 1, 2 (18 values); groups of 5 (the last one 3), zero points above and below.
        const std::vector<std::uint32_t> words = {0x76543210u, 0xFEDCBA98u, 0x00000021u};
        const std::vector<std::int32_t> zeros = {3, 20, 0, -7};
        const std::vector<float> scales = {1.0f, 0.5f, -2.0f, 0.25f};
        check_output({-3.0f, -2.0f, -1.0f, 0.0f, 1.0f,         // (q - 3) * 1
                      -7.5f, -7.0f, -6.5f, -6.0f, -5.5f,       // (q - 20) * 0.5
                      -20.0f, -22.0f, -24.0f, -26.0f, -28.0f,  // q * -2
                      5.5f, 2.0f, 2.25f},                      // (q + 7) * 0.25
                     "4 bits", [&](float* out) {
                         portable().packed_along_row(words.data(), 18, 4, zeros.data(), scales.data(), 5, out);
                     });
    }
    {
        // 2 bits: bytes E4 E4 1B 1B hold 0 1 2 3 0 1 2 3 3 2 1 0 3 2 1 0, then FF holds 3 3 3 3; one group of 20.
        const std::vector<std::uint32_t> words = {0x1B1BE4E4u, 0x000000FFu};
        const std::vector<std::int32_t> zeros = {2};
        const std::vector<float> scales = {1.5f};
        std::vector<float> expected;
        for (const int q : {0, 1, 2, 3, 0, 1, 2, 3, 3, 2, 1, 0, 3, 2, 1, 0, 3, 3, 3, 3}) {
            expected.push_back(static_cast<float>(q - 2) * 1.5f);
        }
        check_output(expected, "2 bits", [&](float* out) {
            portable().packed_along_row(words.data(), 20, 2, zeros.data(), scales.data(), 20, out);
        });
    }
    {
        // 8 bits: q = 1 2 3 4 0 128 255; groups of 3.
        const std::vector<std::uint32_t> words = {0x04030201u, 0x00FF8000u};
        const std::vector<std::int32_t> zeros = {128, 0, -1};
        const std::vector<float> scales = {1.0f, 1.0f, 1.0f};
        check_output({-127.0f, -126.0f, -125.0f, 4.0f, 0.0f, 128.0f, 256.0f}, "8 bits", [&](float* out) {
            portable().packed_along_row(words.data(), 7, 8, zeros.data(), scales.data(), 3, out);
        });
    }
    {
        // Zero points at the ends of int32: 255 - INT32_MIN = 2^31 + 255 rounds to 2^31 + 256 (float32 steps by 256
        // there); 0 - INT32_MAX rounds to -2^31.
        const std::vector<std::uint32_t> words = {0x000000FFu};
        const std::vector<std::int32_t> zeros = {std::numeric_limits<std::int32_t>::min(),
                                                 std::numeric_limits<std::int32_t>::max()};
        const std::vector<float> scales = {1.0f, 1.0f};
        check_output({2147483904.0f, -2147483648.0f}, "extreme zero points", [&](float* out) {
            portable().packed_along_row(words.data(), 2, 8, zeros.data(), scales.data(), 1, out);
        });
    }
}

BOOST_AUTO_TEST_CASE(packed_along_row_unpacks_what_compressed_tensors_packs) {
    std::mt19937 random(3);
    for (const unsigned bits : {2u, 4u, 8u}) {
        for (const std::size_t group : {std::size_t{1}, std::size_t{7}, std::size_t{32}, std::size_t{1000}}) {
            const std::size_t n = 203;
            std::vector<std::uint32_t> q(n);
            for (auto& value : q) value = random() % (1u << bits);
            const std::size_t groups = (n + group - 1) / group;
            std::vector<std::int32_t> zeros(groups);
            std::vector<float> scales(groups);
            for (std::size_t g = 0; g < groups; ++g) {
                zeros[g] = static_cast<std::int32_t>(random() % 300) - 20;
                scales[g] = static_cast<float>(random() % 1000) / 64.0f - 7.0f;
            }
            std::vector<float> expected(n);
            for (std::size_t c = 0; c < n; ++c) {
                const std::int64_t difference = std::int64_t{q[c]} - zeros[c / group];
                expected[c] = static_cast<float>(difference) * scales[c / group];
            }
            const auto words = pack_along(q, bits);
            check_output(expected, std::to_string(bits) + " bits, groups of " + std::to_string(group),
                         [&](float* out) {
                             portable().packed_along_row(words.data(), n, bits, zeros.data(), scales.data(), group,
                                                         out);
                         });
        }
    }
}

BOOST_AUTO_TEST_CASE(field_of_words_by_hand) {
    const std::vector<std::uint32_t> words = {0xABCD1234u, 0x00000000u, 0xFFFFFFFFu};
    const std::vector<std::int32_t> zeros = {8, 0, 16};
    const std::vector<float> scales = {2.0f, 1.0f, -1.0f};
    struct Field {
        unsigned shift, bits;
        std::vector<float> expected;
    };
    // 0xABCD1234 >> 12 & 15 = 1; >> 24 & 255 = 0xAB; >> 30 & 3 = 2; >> 29 & 7 = 5; & 1 = 0.
    for (const Field& field : {Field{12, 4, {-14.0f, 0.0f, 1.0f}}, Field{24, 8, {326.0f, 0.0f, -239.0f}},
                               Field{30, 2, {-12.0f, 0.0f, 13.0f}}, Field{29, 3, {-6.0f, 0.0f, 9.0f}},
                               Field{0, 1, {-16.0f, 0.0f, 15.0f}}}) {
        check_output(field.expected, "shift " + std::to_string(field.shift) + ", bits " + std::to_string(field.bits),
                     [&](float* out) {
                         portable().field_of_words(words.data(), 3, field.shift, field.bits, zeros.data(),
                                                   scales.data(), out);
                     });
    }
}

BOOST_AUTO_TEST_CASE(awq_row_undoes_awq_pack_order) {
    // AutoAWQ packs columns 0 .. 7 into fields in the order 0 2 4 6 1 3 5 7: column values 0 .. 7 make 0x75316420,
    // and columns 8 .. 15 with values 8 .. 15 make 0xFDB9ECA8. Ten columns: the second word's first two.
    const std::vector<std::uint32_t> words = {0x75316420u, 0xFDB9ECA8u};
    std::vector<std::int32_t> zeros(10, 8);
    zeros[9] = 20;
    std::vector<float> scales(10, 0.5f);
    scales[0] = -1.0f;
    std::vector<float> expected;
    for (int c = 0; c < 10; ++c) expected.push_back(static_cast<float>(c - zeros[c]) * scales[c]);
    BOOST_TEST(expected[0] == 8.0f);
    BOOST_TEST(expected[9] == -5.5f);
    check_output(expected, "awq",
                 [&](float* out) { portable().awq_row(words.data(), 10, zeros.data(), scales.data(), out); });
}

BOOST_AUTO_TEST_CASE(transpose_by_hand) {
    const float signalling_nan = from_bits(0x7F800001u);  // copied as it is
    const std::vector<float> src = {1, 2, 3, 4, 5,  //
                                    6, 7, 8, 9, 10,  //
                                    11, 12, 13, 14, signalling_nan};
    check_output({1, 6, 11, 2, 7, 12, 3, 8, 13, 4, 9, 14, 5, 10, signalling_nan}, "3 x 5",
                 [&](float* out) { portable().transpose(src.data(), 3, 5, out, 3); });
    check_output({}, "0 x 5", [&](float* out) { portable().transpose(src.data(), 0, 5, out, 0); });
    // Into rows of 4 values: the fourth of each row (the canary of the fenced output) is left alone.
    const float untouched = from_bits(0x7FA5A5A5u);
    check_output({1, 6, 11, untouched, 2, 7, 12, untouched, 3, 8, 13, untouched, 4, 9, 14, untouched, 5, 10,
                  signalling_nan},
                 "3 x 5 into rows of 4", [&](float* out) { portable().transpose(src.data(), 3, 5, out, 4); });
    // 37 x 70: every value where the formula puts it.
    std::vector<float> big(37 * 70), expected(37 * 70);
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i);
    for (std::size_t r = 0; r < 37; ++r) {
        for (std::size_t c = 0; c < 70; ++c) expected[c * 37 + r] = big[r * 70 + c];
    }
    check_output(expected, "37 x 70", [&](float* out) { portable().transpose(big.data(), 37, 70, out, 37); });
}

BOOST_AUTO_TEST_SUITE_END()
