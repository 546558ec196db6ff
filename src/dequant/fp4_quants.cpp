// Portable kernels for ggml's 4-bit float formats MXFP4 and NVFP4. Both store E2M1 codes as nibbles and decode
// them through kvalues_fp4, which holds every E2M1 value times two (so it fits int8). The scale decoders give half
// the stored scale to compensate, exactly as ggml's GGML_E8M0_TO_FP32_HALF and ggml_ue4m3_to_fp32 do, so
// value * scale is the same float ggml computes.
#include <bit>
#include <cmath>

#include "ggml_tables.hpp"
#include "half.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

namespace t = ggml_tables;

// Half of the E8M0 scale 2^(e - 127), i.e. 2^(e - 128), built from its bits. e = 0 and 1 give float32
// subnormals; e = 255 (the OCP NaN encoding) is not special in ggml and gives 2^127.
inline float e8m0_half(std::uint8_t e) {
    const std::uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<std::uint32_t>(e - 1) << 23;
    return std::bit_cast<float>(bits);
}

// Half of an unsigned E4M3 scale (4 exponent bits with bias 7, 3 mantissa bits). Like ggml: bit 7 is ignored
// except that 0x7F (the E4M3 NaN) decodes to 0, and so does 0x00. Every step is exact in float32.
inline float ue4m3_half(std::uint8_t x) {
    if (x == 0x00 || x == 0x7F) return 0.0f;
    const int exponent = (x >> 3) & 0xF;
    const int mantissa = x & 0x7;
    const float raw = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                    : std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
    return raw * 0.5f;
}

// 2 * half outputs from `half` bytes of nibbles: low nibbles fill dst[0, half), high nibbles dst[half, 2 * half).
inline void decode_nibbles(float scale, const std::uint8_t* q, std::size_t half, float* dst) {
    static_assert(t::kvalues_fp4.size() == 16);
    for (std::size_t j = 0; j < half; ++j) {
        dst[j] = static_cast<float>(t::kvalues_fp4[q[j] & 0xFu]) * scale;
        dst[j + half] = static_cast<float>(t::kvalues_fp4[q[j] >> 4]) * scale;
    }
}

}  // namespace

// MXFP4, 17 bytes per 32 elements: E8M0 scale byte | 16 bytes of nibbles (low: elements 0..15, high: 16..31).
void mxfp4(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += 17, dst += 32) decode_nibbles(e8m0_half(src[0]), src + 1, 16, dst);
}

// NVFP4, 36 bytes per 64 elements: 4 UE4M3 scale bytes, one per 16-element sub-block | 4 x 8 bytes of nibbles,
// sub-block s in bytes 8s..8s+7 (low nibbles: its elements 0..7, high: 8..15).
void nvfp4(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += 36) {
        for (std::size_t s = 0; s < 4; ++s, dst += 16) decode_nibbles(ue4m3_half(src[s]), src + 4 + 8 * s, 8, dst);
    }
}

}  // namespace tensorfs::kernels
