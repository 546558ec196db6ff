// AVX2 kernels for the 256-element super-block quants Q4_K, Q5_K and Q6_K. The per-sub-block factors
// (d * scale, dmin * min) are computed as scalars exactly as in k_quants.cpp; only the per-element
// float(q) * factor [- min] runs eight lanes at a time, with the same roundings in the same order.
#include "fast_simd.hpp"
#include "k_quant_layout.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

// The two factors of one 32-element sub-block of Q4_K / Q5_K: d * scale and dmin * min, each rounded once.
struct SubBlock {
    __m256 scale;
    __m256 min;
};

// Sub-block j (0..7) from the 12 packed scale bytes: 0..3 use the low 6 bits of bytes j and j + 4; 4..7 take
// 4 bits from byte j + 4 and their top 2 bits from the spare high bits of bytes j - 4 (scale) and j (min).
TENSORFS_FAST_TARGET inline SubBlock sub_block_k4(std::size_t j, const std::uint8_t* s, float d, float dmin) {
    int scale, min;
    if (j < 4) {
        scale = s[j] & 63;
        min = s[j + 4] & 63;
    } else {
        scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
    return {_mm256_set1_ps(d * static_cast<float>(scale)), _mm256_set1_ps(dmin * static_cast<float>(min))};
}

}  // namespace

// Q4_K: 4 chunks of 32 bytes; low nibbles are sub-block 2c (64c + 0..31), high nibbles sub-block 2c + 1.
TENSORFS_FAST_TARGET void q4_k_avx2(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += q4k::bytes) {
        const float d = fast::load_f16_scale(src + q4k::d);
        const float dmin = fast::load_f16_scale(src + q4k::dmin);
        const std::uint8_t* scales = src + q4k::scales;
        for (std::size_t chunk = 0; chunk < 4; ++chunk, dst += 64) {
            const SubBlock lo = sub_block_k4(2 * chunk, scales, d, dmin);
            const SubBlock hi = sub_block_k4(2 * chunk + 1, scales, d, dmin);
            const __m256i packed = fast::load_32_bytes(src + q4k::qs + 32 * chunk);
            fast::store_32_scaled_minus(fast::low_nibbles(packed), lo.scale, lo.min, dst);
            fast::store_32_scaled_minus(fast::high_nibbles(packed), hi.scale, hi.min, dst + 32);
        }
    }
}

// Q5_K: Q4_K plus a fifth bit (value 16): chunk c takes bit 2c of qh[l] for its low nibbles and bit 2c + 1
// for its high nibbles.
TENSORFS_FAST_TARGET void q5_k_avx2(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m256i sixteen = _mm256_set1_epi8(16);
    for (std::size_t b = 0; b < nblocks; ++b, src += q5k::bytes) {
        const float d = fast::load_f16_scale(src + q5k::d);
        const float dmin = fast::load_f16_scale(src + q5k::dmin);
        const std::uint8_t* scales = src + q5k::scales;
        const __m256i qh = fast::load_32_bytes(src + q5k::qh);
        for (std::size_t chunk = 0; chunk < 4; ++chunk, dst += 64) {
            const SubBlock lo = sub_block_k4(2 * chunk, scales, d, dmin);
            const SubBlock hi = sub_block_k4(2 * chunk + 1, scales, d, dmin);
            const __m256i lo_bit = _mm256_set1_epi8(static_cast<char>(1u << (2 * chunk)));
            const __m256i hi_bit = _mm256_set1_epi8(static_cast<char>(2u << (2 * chunk)));
            // 16 where the bit is set, else 0.
            const __m256i lo_16 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, lo_bit), lo_bit), sixteen);
            const __m256i hi_16 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, hi_bit), hi_bit), sixteen);
            const __m256i packed = fast::load_32_bytes(src + q5k::qs + 32 * chunk);
            fast::store_32_scaled_minus(_mm256_or_si256(fast::low_nibbles(packed), lo_16), lo.scale, lo.min, dst);
            fast::store_32_scaled_minus(_mm256_or_si256(fast::high_nibbles(packed), hi_16), hi.scale, hi.min,
                                        dst + 32);
        }
    }
}

// Q6_K: per 128-element half, 64 bytes of ql and 32 of qh: element l + 32k (k = 0..3) is a nibble of ql
// (k = 0: low of ql[l], 1: low of ql[l + 32], 2: high of ql[l], 3: high of ql[l + 32]) plus bit pair k of
// qh[l] as bits 4..5, minus 32.
// Elements l < 16 and l >= 16 of each run of 32 have their own signed scale; the factor is d * scale.
TENSORFS_FAST_TARGET void q6_k_avx2(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m256i bits_45 = _mm256_set1_epi8(0x30);
    const __m256i thirty_two = _mm256_set1_epi8(32);
    for (std::size_t b = 0; b < nblocks; ++b, src += q6k::bytes) {
        const float d = fast::load_f16_scale(src + q6k::d);
        const std::uint8_t* sc = src + q6k::scales;
        for (std::size_t half = 0; half < 2; ++half, sc += 8, dst += 128) {
            const __m256i ql_a = fast::load_32_bytes(src + q6k::ql + 64 * half);
            const __m256i ql_b = fast::load_32_bytes(src + q6k::ql + 64 * half + 32);
            const __m256i qh = fast::load_32_bytes(src + q6k::qh + 32 * half);
            // Bit pair k of qh moved to bits 4..5 of each byte (16-bit shifts: the mask drops what crosses bytes).
            const __m256i high[4] = {_mm256_and_si256(_mm256_slli_epi16(qh, 4), bits_45),
                                     _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits_45), _mm256_and_si256(qh, bits_45),
                                     _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits_45)};
            const __m256i low[4] = {fast::low_nibbles(ql_a), fast::low_nibbles(ql_b), fast::high_nibbles(ql_a),
                                    fast::high_nibbles(ql_b)};
            for (std::size_t k = 0; k < 4; ++k) {
                const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low[k], high[k]), thirty_two);
                const float scale_first = d * static_cast<float>(static_cast<std::int8_t>(sc[2 * k]));
                const float scale_second = d * static_cast<float>(static_cast<std::int8_t>(sc[2 * k + 1]));
                fast::store_16_scaled(_mm256_castsi256_si128(q), _mm256_set1_ps(scale_first), dst + 32 * k);
                fast::store_16_scaled(_mm256_extracti128_si256(q, 1), _mm256_set1_ps(scale_second), dst + 32 * k + 16);
            }
        }
    }
}

}  // namespace tensorfs::kernels
