// Kernels for the 8-bit and sub-byte float types of safetensors. Every one of them has at most 256 values, so
// each kernel looks its codes up in a table that is computed at compile time from the type's definition:
//   F8_E4M3      OCP FP8 E4M3 ("fn"): bias 7, no infinities, S.1111.111 is NaN.
//   F8_E5M2      OCP FP8 E5M2: bias 15, IEEE-like (exponent 31: infinity or NaN).
//   F8_E4M3FNUZ  bias 8, no infinities, no negative zero: 0x80 is the only NaN (Graphcore / AMD; LLVM APFloat
//   F8_E5M2FNUZ  bias 16, likewise                               Float8E4M3FNUZ and Float8E5M2FNUZ).
//   F8_E8M0      OCP MX scale: 2^(e - 127), 0xFF is NaN, no sign, no zero.
//   F4           OCP MX FP4 E2M1: bias 1, no infinities or NaN.
//   F6_E2M3      OCP MX FP6 E2M3: bias 1, no infinities or NaN.
//   F6_E3M2      OCP MX FP6 E3M2: bias 3, no infinities or NaN.
// (OCP Microscaling Formats (MX) Specification v1.0, section 5.3; OCP 8-bit Floating Point Specification.)
// A NaN code becomes sign | 0x7fc00000, the sign taken from the code's top bit.
//
// Packing of the sub-byte types. safetensors itself only fixes their widths (4 and 6 bits, a tensor filling whole
// bytes); the bytes are what the framework stores:
//   F4 is PyTorch's float4_e2m1fn_x2: two elements per byte, the first one in the low nibble (PyTorch's own
//      tests pack with `data[1::2] << 4 | data[::2]`).
//   F6 has no PyTorch dtype. We read it as the same little-endian bit stream continued: four elements in three
//      bytes, element k in bits 6k..6k+5 of the 24-bit little-endian word b0 | b1 << 8 | b2 << 16.
#include <array>
#include <bit>
#include <cstdint>

#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

constexpr float nan_with_sign(bool negative) {
    return std::bit_cast<float>((negative ? 0x80000000u : 0u) | 0x7fc00000u);
}
constexpr float infinity_with_sign(bool negative) {
    return std::bit_cast<float>((negative ? 0x80000000u : 0u) | 0x7f800000u);
}

// 2^power, exactly (the powers met here are within double's normal range).
constexpr double power_of_two(int power) {
    double value = 1.0;
    for (; power > 0; --power) value *= 2.0;
    for (; power < 0; ++power) value *= 0.5;
    return value;
}

// A finite code of a binary float with `mantissa_bits` and exponent `bias`: subnormal when the exponent field is 0.
// Every such value is exact in float32.
constexpr float finite_value(bool negative, unsigned exponent, unsigned mantissa, int mantissa_bits, int bias) {
    const double significand = exponent == 0 ? mantissa : mantissa + power_of_two(mantissa_bits);
    const int power = (exponent == 0 ? 1 : static_cast<int>(exponent)) - bias - mantissa_bits;
    const auto magnitude = static_cast<float>(significand * power_of_two(power));
    return negative ? -magnitude : magnitude;
}

enum class Specials {
    None,            // every code is finite (OCP MX FP4 / FP6)
    AllOnesNan,      // all-ones exponent and mantissa are NaN, no infinities (E4M3 "fn")
    Ieee,            // all-ones exponent: infinity (mantissa 0) or NaN
    NegativeZeroNan  // the code 1000...0 is the only NaN (FNUZ)
};

template <int kExponentBits, int kMantissaBits>
constexpr float decode(unsigned code, int bias, Specials specials) {
    constexpr unsigned kMantissaMask = (1u << kMantissaBits) - 1;
    constexpr unsigned kExponentMask = (1u << kExponentBits) - 1;
    const bool negative = (code >> (kExponentBits + kMantissaBits)) & 1u;
    const unsigned exponent = (code >> kMantissaBits) & kExponentMask;
    const unsigned mantissa = code & kMantissaMask;
    switch (specials) {
        case Specials::None:
            break;
        case Specials::AllOnesNan:
            if (exponent == kExponentMask && mantissa == kMantissaMask) return nan_with_sign(negative);
            break;
        case Specials::Ieee:
            if (exponent == kExponentMask)
                return mantissa == 0 ? infinity_with_sign(negative) : nan_with_sign(negative);
            break;
        case Specials::NegativeZeroNan:
            if (negative && exponent == 0 && mantissa == 0) return nan_with_sign(true);
            break;
    }
    return finite_value(negative, exponent, mantissa, kMantissaBits, bias);
}

template <int kExponentBits, int kMantissaBits>
constexpr auto make_table(int bias, Specials specials) {
    std::array<float, 1u << (1 + kExponentBits + kMantissaBits)> table{};
    for (unsigned code = 0; code < table.size(); ++code) {
        table[code] = decode<kExponentBits, kMantissaBits>(code, bias, specials);
    }
    return table;
}

constexpr auto make_e8m0_table() {
    std::array<float, 256> table{};
    for (unsigned code = 0; code < 255; ++code)
        table[code] = static_cast<float>(power_of_two(static_cast<int>(code) - 127));
    table[255] = nan_with_sign(false);
    return table;
}

constexpr auto kE4M3 = make_table<4, 3>(7, Specials::AllOnesNan);
constexpr auto kE5M2 = make_table<5, 2>(15, Specials::Ieee);
constexpr auto kE4M3Fnuz = make_table<4, 3>(8, Specials::NegativeZeroNan);
constexpr auto kE5M2Fnuz = make_table<5, 2>(16, Specials::NegativeZeroNan);
constexpr auto kE8M0 = make_e8m0_table();
constexpr auto kE2M1 = make_table<2, 1>(1, Specials::None);
constexpr auto kE2M3 = make_table<2, 3>(1, Specials::None);
constexpr auto kE3M2 = make_table<3, 2>(3, Specials::None);

void look_up_bytes(const std::array<float, 256>& table, const std::uint8_t* src, std::size_t n, float* dst) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = table[src[i]];
}

// Blocks of 3 bytes holding 4 six-bit codes, low bits first.
void look_up_sixes(const std::array<float, 64>& table, const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += 3, dst += 4) {
        const std::uint32_t word =
            src[0] | (static_cast<std::uint32_t>(src[1]) << 8) | (static_cast<std::uint32_t>(src[2]) << 16);
        for (unsigned k = 0; k < 4; ++k) dst[k] = table[(word >> (6 * k)) & 0x3Fu];
    }
}

}  // namespace

void f8_e4m3(const std::uint8_t* src, std::size_t n, float* dst) { look_up_bytes(kE4M3, src, n, dst); }
void f8_e5m2(const std::uint8_t* src, std::size_t n, float* dst) { look_up_bytes(kE5M2, src, n, dst); }
void f8_e4m3fnuz(const std::uint8_t* src, std::size_t n, float* dst) { look_up_bytes(kE4M3Fnuz, src, n, dst); }
void f8_e5m2fnuz(const std::uint8_t* src, std::size_t n, float* dst) { look_up_bytes(kE5M2Fnuz, src, n, dst); }
void f8_e8m0(const std::uint8_t* src, std::size_t n, float* dst) { look_up_bytes(kE8M0, src, n, dst); }

void f4_e2m1(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t i = 0; i < nblocks; ++i) {
        dst[2 * i] = kE2M1[src[i] & 0x0Fu];
        dst[2 * i + 1] = kE2M1[src[i] >> 4];
    }
}

void f6_e2m3(const std::uint8_t* src, std::size_t nblocks, float* dst) { look_up_sixes(kE2M3, src, nblocks, dst); }
void f6_e3m2(const std::uint8_t* src, std::size_t nblocks, float* dst) { look_up_sixes(kE3M2, src, nblocks, dst); }

}  // namespace tensorfs::kernels
