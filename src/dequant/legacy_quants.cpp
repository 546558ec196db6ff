// Kernels for ggml's first-generation 32-element block quants: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
// Every block starts with an f16 scale `d` (Q4_1/Q5_1 then an f16 offset `m`); the two 4-bit halves of
// byte j hold elements j and j + 16. The float operations follow ggml's dequantize_row_* in the same
// order (integer -> float, times d, then plus m) so the results are identical bit for bit.
#include "half.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

constexpr std::size_t kElements = 32;
constexpr std::size_t kHalf = kElements / 2;

constexpr std::size_t kQ4_0Bytes = 2 + 16;          // d, 32 nibbles
constexpr std::size_t kQ4_1Bytes = 2 + 2 + 16;      // d, m, 32 nibbles
constexpr std::size_t kQ5_0Bytes = 2 + 4 + 16;      // d, 32 high bits, 32 nibbles
constexpr std::size_t kQ5_1Bytes = 2 + 2 + 4 + 16;  // d, m, 32 high bits, 32 nibbles
constexpr std::size_t kQ8_0Bytes = 2 + 32;          // d, 32 signed bytes

// q * d + m as two separately rounded steps, like ggml (a fused multiply-add would round once).
inline float scale_and_offset(int q, float d, float m) {
    const float scaled = static_cast<float>(q) * d;
    return scaled + m;
}

}  // namespace

void q4_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += kQ4_0Bytes, dst += kElements) {
        const float d = f16_to_f32(load_u16(src));
        const std::uint8_t* qs = src + 2;
        for (std::size_t j = 0; j < kHalf; ++j) {
            dst[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
            dst[j + kHalf] = static_cast<float>((qs[j] >> 4) - 8) * d;
        }
    }
}

void q4_1(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += kQ4_1Bytes, dst += kElements) {
        const float d = f16_to_f32(load_u16(src));
        const float m = f16_to_f32(load_u16(src + 2));
        const std::uint8_t* qs = src + 4;
        for (std::size_t j = 0; j < kHalf; ++j) {
            dst[j] = scale_and_offset(qs[j] & 0x0F, d, m);
            dst[j + kHalf] = scale_and_offset(qs[j] >> 4, d, m);
        }
    }
}

void q5_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += kQ5_0Bytes, dst += kElements) {
        const float d = f16_to_f32(load_u16(src));
        const std::uint32_t qh = load_u32(src + 2);  // bit i = fifth bit of element i
        const std::uint8_t* qs = src + 6;
        for (std::size_t j = 0; j < kHalf; ++j) {
            const int low = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
            const int high = (qs[j] >> 4) | static_cast<int>(((qh >> (j + kHalf)) & 1u) << 4);
            dst[j] = static_cast<float>(low - 16) * d;
            dst[j + kHalf] = static_cast<float>(high - 16) * d;
        }
    }
}

void q5_1(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += kQ5_1Bytes, dst += kElements) {
        const float d = f16_to_f32(load_u16(src));
        const float m = f16_to_f32(load_u16(src + 2));
        const std::uint32_t qh = load_u32(src + 4);
        const std::uint8_t* qs = src + 8;
        for (std::size_t j = 0; j < kHalf; ++j) {
            const int low = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
            const int high = (qs[j] >> 4) | static_cast<int>(((qh >> (j + kHalf)) & 1u) << 4);
            dst[j] = scale_and_offset(low, d, m);
            dst[j + kHalf] = scale_and_offset(high, d, m);
        }
    }
}

void q8_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += kQ8_0Bytes, dst += kElements) {
        const float d = f16_to_f32(load_u16(src));
        const std::uint8_t* qs = src + 2;
        for (std::size_t j = 0; j < kElements; ++j) {
            dst[j] = static_cast<float>(static_cast<std::int8_t>(qs[j])) * d;
        }
    }
}

}  // namespace tensorfs::kernels
