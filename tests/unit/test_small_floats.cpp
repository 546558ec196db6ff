// The safetensors dtypes the vectors lack (F8_E8M0, the FNUZ types, F4, F6), every bit pattern, against a small
// decoder written here from the published definitions:
//  - OCP Microscaling Formats (MX) Specification v1.0, section 5.3.3 (FP6 E2M3 and E3M2, FP4 E2M1: no
//    infinities, no NaN, exponent bias 1 / 3 / 1) and section 5.4.1 (E8M0: 2^(E-127), 0xFF is NaN);
//  - the FNUZ formats of Graphcore's "8-bit Numerical Formats for Deep Neural Networks" (Noune et al., 2022), as
//    LLVM's APFloat defines Float8E4M3FNUZ and Float8E5M2FNUZ: exponent bias 8 / 16, no infinities, no negative
//    zero, the pattern 1000 0000 is the only NaN.
// A value is (-1)^S * 2^(E - bias) * (1 + M / 2^m) for E > 0 and (-1)^S * 2^(1 - bias) * (M / 2^m) for E = 0.
#include <boost/test/unit_test.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tensorfs/dtype.hpp"
#include "vectors.hpp"

using namespace tensorfs;

namespace {

struct Format {
    int exponent_bits;
    int mantissa_bits;
    int bias;
    bool fnuz;  // 1000...0 is NaN
};

float reference_decode(const Format& format, unsigned code) {
    const unsigned total_bits = 1 + format.exponent_bits + format.mantissa_bits;
    const bool negative = (code >> (total_bits - 1)) & 1u;
    const unsigned exponent = (code >> format.mantissa_bits) & ((1u << format.exponent_bits) - 1);
    const unsigned mantissa = code & ((1u << format.mantissa_bits) - 1);
    if (format.fnuz && negative && exponent == 0 && mantissa == 0) return std::numeric_limits<float>::quiet_NaN();
    const double fraction = std::ldexp(static_cast<double>(mantissa), -format.mantissa_bits);
    const double magnitude = exponent == 0 ? std::ldexp(fraction, 1 - format.bias)
                                           : std::ldexp(1.0 + fraction, static_cast<int>(exponent) - format.bias);
    return static_cast<float>(negative ? -magnitude : magnitude);
}

const TypeTraits& dtype(const char* name) {
    const TypeTraits* type = safetensors_dtype_by_name(name);
    BOOST_REQUIRE_MESSAGE(type != nullptr && type->portable != nullptr, name << " has no kernel");
    return *type;
}

std::vector<float> decode(const TypeTraits& type, const std::vector<std::uint8_t>& bytes) {
    const std::size_t blocks = bytes.size() / type.block_bytes;
    std::vector<float> out(blocks * type.block_elements);
    type.portable(bytes.data(), blocks, out.data());
    return out;
}

std::vector<std::uint8_t> every_byte() {
    std::vector<std::uint8_t> bytes(256);
    for (unsigned i = 0; i < 256; ++i) bytes[i] = static_cast<std::uint8_t>(i);
    return bytes;
}

std::uint32_t bits_of(float value) { return std::bit_cast<std::uint32_t>(value); }

void check_every_byte(const char* name, const Format& format) {
    std::vector<float> expected(256);
    for (unsigned code = 0; code < 256; ++code) expected[code] = reference_decode(format, code);
    const auto got = decode(dtype(name), every_byte());
    test::check_same_floats(expected, got.data(), got.size(), name);
}

// Packs 6-bit codes the way F6 is read: a little-endian bit stream, element k of each group of four in bits
// 6k..6k+5 of the 24-bit word b0 | b1 << 8 | b2 << 16.
std::vector<std::uint8_t> pack_sixes(const std::vector<unsigned>& codes) {
    std::vector<std::uint8_t> bytes;
    for (std::size_t i = 0; i < codes.size(); i += 4) {
        std::uint32_t word = 0;
        for (unsigned k = 0; k < 4; ++k) word |= codes[i + k] << (6 * k);
        bytes.push_back(word & 0xFF);
        bytes.push_back((word >> 8) & 0xFF);
        bytes.push_back((word >> 16) & 0xFF);
    }
    return bytes;
}

void check_every_six_bit_code(const char* name, const Format& format) {
    std::vector<unsigned> codes(64);
    std::vector<float> expected(64);
    for (unsigned code = 0; code < 64; ++code) {
        codes[code] = (code * 37) % 64;  // a permutation, so that every code sits in every position of a group
        expected[code] = reference_decode(format, codes[code]);
    }
    const auto got = decode(dtype(name), pack_sixes(codes));
    test::check_same_floats(expected, got.data(), got.size(), name);
}

constexpr Format kE4M3Fnuz{4, 3, 8, true};
constexpr Format kE5M2Fnuz{5, 2, 16, true};
constexpr Format kE2M1{2, 1, 1, false};
constexpr Format kE2M3{2, 3, 1, false};
constexpr Format kE3M2{3, 2, 3, false};

}  // namespace

BOOST_AUTO_TEST_SUITE(small_floats)

BOOST_AUTO_TEST_CASE(f8_e8m0_every_byte_is_a_power_of_two) {
    std::vector<float> expected(256);
    for (unsigned code = 0; code < 255; ++code) expected[code] = std::ldexp(1.0f, static_cast<int>(code) - 127);
    expected[255] = std::numeric_limits<float>::quiet_NaN();
    const auto got = decode(dtype("F8_E8M0"), every_byte());
    test::check_same_floats(expected, got.data(), got.size(), "F8_E8M0");
    BOOST_TEST(got[127] == 1.0f);
    BOOST_TEST(got[128] == 2.0f);
    BOOST_TEST(got[0] == std::ldexp(1.0f, -127));  // a float32 subnormal, still exact
    BOOST_TEST(got[254] == std::ldexp(1.0f, 127));
    BOOST_TEST(bits_of(got[255]) == 0x7fc00000u);
}

BOOST_AUTO_TEST_CASE(f8_e4m3fnuz_every_byte) {
    check_every_byte("F8_E4M3FNUZ", kE4M3Fnuz);
    const auto got = decode(dtype("F8_E4M3FNUZ"), every_byte());
    BOOST_TEST(got[0x7F] == 240.0f);                 // largest value
    BOOST_TEST(got[0x08] == std::ldexp(1.0f, -7));   // smallest normal
    BOOST_TEST(got[0x01] == std::ldexp(1.0f, -10));  // smallest subnormal
    BOOST_TEST(got[0xFF] == -240.0f);
    BOOST_TEST(bits_of(got[0x00]) == 0u);  // the only zero is +0
    BOOST_TEST(bits_of(got[0x80]) == 0xffc00000u);
}

BOOST_AUTO_TEST_CASE(f8_e5m2fnuz_every_byte) {
    check_every_byte("F8_E5M2FNUZ", kE5M2Fnuz);
    const auto got = decode(dtype("F8_E5M2FNUZ"), every_byte());
    BOOST_TEST(got[0x7F] == 57344.0f);
    BOOST_TEST(got[0x04] == std::ldexp(1.0f, -15));
    BOOST_TEST(got[0x01] == std::ldexp(1.0f, -17));
    BOOST_TEST(got[0x7C] == 32768.0f);  // no infinity where IEEE E5M2 has one
    BOOST_TEST(bits_of(got[0x80]) == 0xffc00000u);
}

BOOST_AUTO_TEST_CASE(f4_every_byte_low_nibble_first) {
    std::vector<float> expected(512);
    for (unsigned byte = 0; byte < 256; ++byte) {
        expected[2 * byte] = reference_decode(kE2M1, byte & 0x0F);
        expected[2 * byte + 1] = reference_decode(kE2M1, byte >> 4);
    }
    const auto got = decode(dtype("F4"), every_byte());
    test::check_same_floats(expected, got.data(), got.size(), "F4");
    // The E2M1 values of the MX spec, codes 0x0..0x7, from the byte 0x70 | code (low nibble first).
    const float values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (unsigned code = 0; code < 8; ++code) {
        BOOST_TEST(got[2 * (0x70 | code)] == values[code]);
        BOOST_TEST(got[2 * (0x70 | code) + 1] == 6.0f);
    }
    BOOST_TEST(bits_of(got[2 * 0x08]) == 0x80000000u);  // 0x8 is -0
    BOOST_TEST(got[2 * 0x0F] == -6.0f);
}

BOOST_AUTO_TEST_CASE(f6_e2m3_every_code) {
    check_every_six_bit_code("F6_E2M3", kE2M3);
    const auto got = decode(dtype("F6_E2M3"), pack_sixes({0x1F, 0x08, 0x01, 0x3F}));
    BOOST_TEST(got[0] == 7.5f);    // largest normal
    BOOST_TEST(got[1] == 1.0f);    // smallest normal
    BOOST_TEST(got[2] == 0.125f);  // smallest subnormal
    BOOST_TEST(got[3] == -7.5f);
}

BOOST_AUTO_TEST_CASE(f6_e3m2_every_code) {
    check_every_six_bit_code("F6_E3M2", kE3M2);
    const auto got = decode(dtype("F6_E3M2"), pack_sixes({0x1F, 0x04, 0x01, 0x23}));
    BOOST_TEST(got[0] == 28.0f);     // largest normal
    BOOST_TEST(got[1] == 0.25f);     // smallest normal
    BOOST_TEST(got[2] == 0.0625f);   // smallest subnormal
    BOOST_TEST(got[3] == -0.1875f);  // largest subnormal, negative
}

BOOST_AUTO_TEST_CASE(f6_bit_order_within_three_bytes) {
    // Code 0x1F (7.5 in E2M3) placed in each of the four positions, by hand.
    const std::vector<std::uint8_t> bytes = {0x1F, 0x00, 0x00, 0xC0, 0x07, 0x00, 0x00, 0xF0, 0x01, 0x00, 0x00, 0x7C};
    const auto got = decode(dtype("F6_E2M3"), bytes);
    const std::vector<float> expected = {7.5f, 0, 0, 0, 0, 7.5f, 0, 0, 0, 0, 7.5f, 0, 0, 0, 0, 7.5f};
    BOOST_REQUIRE_EQUAL(got.size(), 16u);
    test::check_same_floats(expected, got.data(), got.size(), "F6 positions");
}

BOOST_AUTO_TEST_CASE(block_geometry_of_the_sub_byte_types) {
    BOOST_TEST(dtype("F4").block_elements == 2u);
    BOOST_TEST(dtype("F4").block_bytes == 1u);
    BOOST_TEST(dtype("F6_E2M3").block_elements == 4u);
    BOOST_TEST(dtype("F6_E2M3").block_bytes == 3u);
    BOOST_TEST(dtype("F6_E3M2").block_bytes == 3u);
    BOOST_TEST(safetensors_dtype_by_name("C64")->portable == nullptr);
}

BOOST_AUTO_TEST_SUITE_END()
