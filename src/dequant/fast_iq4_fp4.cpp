// AVX2 kernels for the two 16-level lookup formats that fill real models: IQ4_XS (ggml's non-linear levels
// kvalues_iq4nl) and MXFP4 (E2M1 levels kvalues_fp4 with an E8M0 scale). A byte shuffle looks up 16 or 32
// nibbles at once; each level then becomes float(level) * scale, the same single product as i_quants.cpp
// and fp4_quants.cpp compute.
#include <bit>

#include "fast_simd.hpp"
#include "ggml_tables.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

namespace t = ggml_tables;

static_assert(t::kvalues_iq4nl.size() == 16 && t::kvalues_fp4.size() == 16);

// The 16 signed levels of a table as shuffle operands: once, and in both 128-bit lanes for the 256-bit shuffle.
TENSORFS_FAST_TARGET inline __m128i levels_in_one_lane(const std::array<std::int8_t, 16>& levels) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(levels.data()));
}
TENSORFS_FAST_TARGET inline __m256i levels_in_both_lanes(const std::array<std::int8_t, 16>& levels) {
    return _mm256_broadcastsi128_si256(levels_in_one_lane(levels));
}

// IQ4_XS, 136 bytes per 256: f16 d | u16 scales_h (2 high bits per group) | 4 scales_l bytes (a low nibble per
// group) | 8 groups of 16 bytes: low nibbles are elements 0..15 of the group, high nibbles 16..31.
namespace iq4xs {
constexpr std::size_t scales_h = 2;
constexpr std::size_t scales_l = 4;
constexpr std::size_t qs = 8;
constexpr std::size_t bytes = 136;
constexpr std::size_t groups = 8;
}  // namespace iq4xs

// d * (s - 32) for the 6-bit scale s of group g: its low nibble from scales_l, its top 2 bits from scales_h.
inline float iq4xs_group_scale(const std::uint8_t* block, unsigned scales_high, float d, std::size_t g) {
    const unsigned low = (block[iq4xs::scales_l + g / 2] >> (4 * (g % 2))) & 0xFu;
    const unsigned high = (scales_high >> (2 * g)) & 3u;
    return d * static_cast<float>(static_cast<int>(low | (high << 4)) - 32);
}

// Half of the E8M0 scale 2^(e - 127), i.e. 2^(e - 128), from its bits, as fp4_quants.cpp and ggml's
// GGML_E8M0_TO_FP32_HALF: e = 0 and 1 give float32 subnormals, e = 255 is 2^127 (not NaN).
inline float e8m0_half(std::uint8_t e) {
    const std::uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<std::uint32_t>(e - 1) << 23;
    return std::bit_cast<float>(bits);
}

}  // namespace

// Two groups per 32-byte load: the shuffle works per 128-bit lane, so lane 0 holds group 2p and lane 1
// group 2p + 1, each lane giving that group's elements 0..15 (low nibbles) and 16..31 (high nibbles).
TENSORFS_FAST_TARGET void iq4_xs_avx2(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m256i levels = levels_in_both_lanes(t::kvalues_iq4nl);
    for (std::size_t b = 0; b < nblocks; ++b, src += iq4xs::bytes) {
        const float d = fast::load_f16_scale(src);
        std::uint16_t scales_high;
        std::memcpy(&scales_high, src + iq4xs::scales_h, sizeof scales_high);
        for (std::size_t g = 0; g < iq4xs::groups; g += 2, dst += 64) {
            const __m256i packed = fast::load_32_bytes(src + iq4xs::qs + 16 * g);
            const __m256i first = _mm256_shuffle_epi8(levels, fast::low_nibbles(packed));
            const __m256i second = _mm256_shuffle_epi8(levels, fast::high_nibbles(packed));
            const __m256 scale_a = _mm256_set1_ps(iq4xs_group_scale(src, scales_high, d, g));
            const __m256 scale_b = _mm256_set1_ps(iq4xs_group_scale(src, scales_high, d, g + 1));
            fast::store_16_scaled(_mm256_castsi256_si128(first), scale_a, dst);
            fast::store_16_scaled(_mm256_castsi256_si128(second), scale_a, dst + 16);
            fast::store_16_scaled(_mm256_extracti128_si256(first, 1), scale_b, dst + 32);
            fast::store_16_scaled(_mm256_extracti128_si256(second, 1), scale_b, dst + 48);
        }
    }
}

// MXFP4, 17 bytes per 32 elements: E8M0 scale byte | 16 bytes of nibbles (low: elements 0..15, high: 16..31).
TENSORFS_FAST_TARGET void mxfp4_avx2(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m128i levels = levels_in_one_lane(t::kvalues_fp4);
    for (std::size_t b = 0; b < nblocks; ++b, src += 17, dst += 32) {
        const __m256 scale = _mm256_set1_ps(e8m0_half(src[0]));
        const __m128i packed = fast::load_16_bytes(src + 1);
        fast::store_16_scaled(_mm_shuffle_epi8(levels, fast::low_nibbles(packed)), scale, dst);
        fast::store_16_scaled(_mm_shuffle_epi8(levels, fast::high_nibbles(packed)), scale, dst + 16);
    }
}

}  // namespace tensorfs::kernels
