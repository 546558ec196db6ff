// Portable kernels for ggml's 4-bit float formats MXFP4 and NVFP4. Both store E2M1 codes as nibbles and decode
// them through kvalues_fp4, which holds every E2M1 value times two (so it fits int8); the scale decoders of
// fp4_scales.hpp give half the stored scale to compensate.
#include "fp4_scales.hpp"
#include "ggml_tables.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

namespace t = ggml_tables;

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
        for (std::size_t s = 0; s < 4; ++s, dst += 16) decode_nibbles(kUe4m3Halves[src[s]], src + 4 + 8 * s, 8, dst);
    }
}

}  // namespace tensorfs::kernels
