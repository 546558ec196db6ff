// MXFP4 / NVFP4 scale bytes that the reference vectors never contain (their scales are all ordinary):
// E8M0 subnormal and extreme exponents, UE4M3 zero, subnormals, the 0x7F NaN code and bytes with bit 7 set.
// Expected scales are written out by hand from ggml's decoders (GGML_E8M0_TO_FP32_HALF, ggml_ue4m3_to_fp32),
// which return half the stored scale because kvalues_fp4 holds E2M1 values times two.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "tensorfs/dtype.hpp"
#include "vectors.hpp"

using namespace tensorfs;

namespace {

// Every nibble byte is 0x97: low nibble 7 (E2M1 6.0, stored as 12), high nibble 9 (E2M1 -0.5, stored as -1).
constexpr std::uint8_t kNibbles = 0x97;
constexpr float kLow = 12.0f;
constexpr float kHigh = -1.0f;

// The floats a block of `half`-element halves decodes to when all its nibble bytes are kNibbles.
void append_expected(std::vector<float>& out, float scale, std::size_t half) {
    for (std::size_t j = 0; j < half; ++j) out.push_back(kLow * scale);
    for (std::size_t j = 0; j < half; ++j) out.push_back(kHigh * scale);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fp4_scales)

BOOST_AUTO_TEST_CASE(mxfp4_e8m0_extremes) {
    const auto* type = ggml_type_by_id(39);
    BOOST_REQUIRE(type != nullptr && type->name == "MXFP4");
    // exponent byte -> half of 2^(e - 127)
    const std::array<std::pair<std::uint8_t, float>, 5> cases{{
        {0, std::ldexp(1.0f, -128)},  // float32 subnormal
        {1, std::ldexp(1.0f, -127)},  // float32 subnormal
        {127, 0.5f},
        {254, std::ldexp(1.0f, 126)},
        {255, std::ldexp(1.0f, 127)},  // not NaN in ggml; 12 * 2^127 overflows to +inf
    }};
    std::vector<std::uint8_t> raw;
    std::vector<float> expected;
    for (const auto& [exponent, scale] : cases) {
        raw.push_back(exponent);
        raw.insert(raw.end(), 16, kNibbles);
        append_expected(expected, scale, 16);
    }
    BOOST_REQUIRE(std::isinf(expected[4 * 32]));
    std::vector<float> out(expected.size());
    type->portable(raw.data(), cases.size(), out.data());
    test::check_same_floats(expected, out.data(), out.size(), "MXFP4 extreme exponents");
}

BOOST_AUTO_TEST_CASE(nvfp4_ue4m3_special_bytes) {
    const auto* type = ggml_type_by_id(40);
    BOOST_REQUIRE(type != nullptr && type->name == "NVFP4");
    // Two blocks of four sub-block scales each: scale byte -> half of its UE4M3 value.
    const std::array<std::pair<std::uint8_t, float>, 8> scales{{
        {0x7F, 0.0f},                // the E4M3 NaN code decodes to 0
        {0xFF, 240.0f},              // bit 7 ignored: exponent 15, mantissa 7 -> 480 / 2
        {0x01, 0x1p-10f},            // smallest subnormal 2^-9, halved
        {0x80, 0.0f},                // bit 7 ignored: zero
        {0x7E, 224.0f},              // largest finite E4M3 448, halved
        {0x38, 0.5f},                // 1.0, halved
        {0x08, 0x1p-7f},             // smallest normal 2^-6, halved
        {0x07, 7.0f * 0x1p-10f},     // largest subnormal 7 * 2^-9, halved
    }};
    std::vector<std::uint8_t> raw;
    std::vector<float> expected;
    for (std::size_t block = 0; block < 2; ++block) {
        for (std::size_t s = 0; s < 4; ++s) raw.push_back(scales[4 * block + s].first);
        raw.insert(raw.end(), 32, kNibbles);
        for (std::size_t s = 0; s < 4; ++s) append_expected(expected, scales[4 * block + s].second, 8);
    }
    std::vector<float> out(expected.size());
    type->portable(raw.data(), 2, out.data());
    test::check_same_floats(expected, out.data(), out.size(), "NVFP4 special scale bytes");
    BOOST_TEST(std::signbit(out[8]), "-1 times a zero scale is -0, as in ggml");
}

BOOST_AUTO_TEST_SUITE_END()
