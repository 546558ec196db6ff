// The scale decoders of ggml's 4-bit float formats, shared by the portable kernels (fp4_quants.cpp) and the fast
// ones (fast_nibble_tables.inl). kvalues_fp4 holds every E2M1 value times two, so both return half the stored
// scale, exactly as ggml's GGML_E8M0_TO_FP32_HALF and ggml_ue4m3_to_fp32 do; value * scale is then ggml's float.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace tensorfs::kernels {

// MXFP4: half of the E8M0 scale 2^(e - 127), i.e. 2^(e - 128), built from its bits. e = 0 and 1 give float32
// subnormals; e = 255 (the OCP NaN encoding) is not special in ggml and gives 2^127.
constexpr float e8m0_half(std::uint8_t e) {
    const std::uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<std::uint32_t>(e - 1) << 23;
    return std::bit_cast<float>(bits);
}

namespace detail {

// Half of an unsigned E4M3 scale (4 exponent bits with bias 7, 3 mantissa bits). Like ggml: bit 7 is ignored except
// that 0x7F (the E4M3 NaN) decodes to 0, and so does 0x00. The value is (8 + m) * 2^(e - 10), or m * 2^-9 for e = 0:
// a small integer times a power of two, every step exact in float32.
constexpr float ue4m3_half(std::uint8_t x) {
    if (x == 0x00 || x == 0x7F) return 0.0f;
    const int exponent = (x >> 3) & 0xF;
    const int mantissa = x & 0x7;
    float value = static_cast<float>(exponent == 0 ? mantissa : 8 + mantissa);
    for (int power = exponent == 0 ? -9 : exponent - 10; power != 0; power += power < 0 ? 1 : -1) {
        value *= power < 0 ? 0.5f : 2.0f;
    }
    return value * 0.5f;
}

constexpr std::array<float, 256> make_ue4m3_halves() {
    std::array<float, 256> halves{};
    for (unsigned x = 0; x < 256; ++x) halves[x] = ue4m3_half(static_cast<std::uint8_t>(x));
    return halves;
}

}  // namespace detail

// NVFP4: the half scale of every UE4M3 byte.
inline constexpr std::array<float, 256> kUe4m3Halves = detail::make_ue4m3_halves();

}  // namespace tensorfs::kernels
