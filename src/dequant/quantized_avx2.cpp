// The AVX2 kernels of tensorfs/quantized_kernels.hpp (AVX2 and F16C): the steps quantized_fast.inl walks rows with,
// for registers of 8 values. Each function carries the target attribute (as in fast_avx2.cpp), and
// quantized_kernels.cpp picks these kernels only on a CPU that has the extensions.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "quantized_scalar.hpp"
#include "quantized_variants.hpp"

#define TENSORFS_TARGET __attribute__((target("avx2,f16c")))

namespace tensorfs::quantized::avx2 {
namespace {

constexpr std::size_t kLanes = 8;
using Floats = __m256;
using Ints = __m256i;

TENSORFS_TARGET inline Floats broadcast(float value) { return _mm256_set1_ps(value); }
TENSORFS_TARGET inline Ints splat(std::uint32_t value) { return _mm256_set1_epi32(static_cast<int>(value)); }
TENSORFS_TARGET inline Floats load_floats(const float* p) { return _mm256_loadu_ps(p); }
TENSORFS_TARGET inline Ints load_ints(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

TENSORFS_TARGET inline __m128i load_8_bytes(const void* p) { return _mm_loadl_epi64(static_cast<const __m128i*>(p)); }

// --- FP8 E4M3 ---

// The NaN of each code, sign | 0x7FC00000, in the lanes that `nan` marks; `values` in the others. 8 lanes from the
// low 8 bytes of `codes` and `nan` (0xFF where the code is a NaN).
TENSORFS_TARGET inline __m256 with_fp8_nans(__m256 values, __m128i codes, __m128i nan) {
    // Sign-extended to 32 bits, a code keeps its sign in bit 31, and a byte of `nan` fills its lane.
    const __m256i sign = _mm256_and_si256(_mm256_cvtepi8_epi32(codes), splat(0x80000000u));
    const __m256 nans = _mm256_castsi256_ps(_mm256_or_si256(sign, splat(0x7FC00000u)));
    return _mm256_blendv_ps(values, nans, _mm256_castsi256_ps(_mm256_cvtepi8_epi32(nan)));
}

// 16 E4M3 bytes times `scale`. Each code's fields move into an IEEE half (sign to bit 15, exponent and mantissa
// shifted left by 7), whose exact conversion is the value times 2^-8, and an exact product by 256 restores the value
// (as fast_small_floats.inl decodes F8_E4M3). NaN codes (S.1111.111) then take their own NaN whatever the scale
// (quantized_scalar.hpp's fp8_product).
TENSORFS_TARGET inline void fp8_step(const std::uint8_t* w, __m256 scale, float* out) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
    const __m256i codes = _mm256_cvtepu8_epi16(bytes);
    const __m256i sign = _mm256_and_si256(_mm256_slli_epi16(codes, 8), _mm256_set1_epi16(-0x8000));
    const __m256i halves =
        _mm256_or_si256(sign, _mm256_slli_epi16(_mm256_and_si256(codes, _mm256_set1_epi16(0x7F)), 7));
    const __m256 to_value = _mm256_set1_ps(256.0f);
    __m256 low = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(halves)), to_value), scale);
    __m256 high = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(halves, 1)), to_value), scale);
    const __m128i nan = _mm_cmpeq_epi8(_mm_and_si128(bytes, _mm_set1_epi8(0x7F)), _mm_set1_epi8(0x7F));
    if (_mm_movemask_epi8(nan) != 0) {
        low = with_fp8_nans(low, bytes, nan);
        high = with_fp8_nans(high, _mm_srli_si128(bytes, 8), _mm_srli_si128(nan, 8));
    }
    _mm256_storeu_ps(out, low);
    _mm256_storeu_ps(out + 8, high);
}

// --- E2M1 (NVFP4, MXFP4) ---

// The E2M1 values of 8 nibbles, one per 32-bit lane: the magnitude of the low 3 bits (which are all
// permutevar8x32 reads of an index), then the sign of bit 3. Nibble 8 is -0.0, as in the portable table.
TENSORFS_TARGET inline __m256 e2m1_values(__m256i nibbles) {
    const __m256 magnitudes = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(nibbles, splat(8)), 28);
    return _mm256_xor_ps(_mm256_permutevar8x32_ps(magnitudes, nibbles), _mm256_castsi256_ps(sign));
}

// The 16 nibbles of 8 bytes as bytes, in value order: each byte's low nibble, then its high one.
TENSORFS_TARGET inline __m128i nibbles_in_order(__m128i bytes) {
    const __m128i low = _mm_and_si128(bytes, _mm_set1_epi8(0x0F));
    const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0F));
    return _mm_unpacklo_epi8(low, high);
}

// The 16 values of 8 packed bytes times `scale`.
TENSORFS_TARGET inline void e2m1_step(const std::uint8_t* packed, __m256 scale, float* out) {
    const __m128i nibbles = nibbles_in_order(load_8_bytes(packed));
    _mm256_storeu_ps(out, _mm256_mul_ps(e2m1_values(_mm256_cvtepu8_epi32(nibbles)), scale));
    _mm256_storeu_ps(out + 8, _mm256_mul_ps(e2m1_values(_mm256_cvtepu8_epi32(_mm_srli_si128(nibbles, 8))), scale));
}

// --- integers ---

// out[0..8) = f32(q - zeros) * scales, unless a difference overflows 32 bits (false: nothing is stored). q >= 0,
// so the wrapped difference is wrong exactly when the zero point is negative and the difference came out negative.
TENSORFS_TARGET inline bool store_integers(__m256i q, __m256i zeros, __m256 scales, float* out) {
    const __m256i difference = _mm256_sub_epi32(q, zeros);
    if (_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(difference, zeros))) != 0) return false;
    _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_cvtepi32_ps(difference), scales));
    return true;
}

// Fields c .. c + 7 of a row packed along it, c a multiple of 8 (so that they lie in whole words).
template <unsigned kBits>
TENSORFS_TARGET inline __m256i packed_fields(const std::uint32_t* words, std::size_t c) {
    if constexpr (kBits == 8) {
        return _mm256_cvtepu8_epi32(load_8_bytes(words + c / 4));
    } else if constexpr (kBits == 4) {
        const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
        return _mm256_and_si256(_mm256_srlv_epi32(splat(load_word(words, c / 8)), shifts), splat(15));
    } else {
        // Half a word: its low or its high 16 bits.
        const __m256i shifts = _mm256_add_epi32(_mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14),
                                                splat(static_cast<std::uint32_t>(2 * (c % 16))));
        return _mm256_and_si256(_mm256_srlv_epi32(splat(load_word(words, c / 16)), shifts), splat(3));
    }
}

// (words[i] >> shift) & mask for 8 words.
TENSORFS_TARGET inline __m256i shifted_fields(const std::uint32_t* words, __m128i shift, __m256i mask) {
    return _mm256_and_si256(_mm256_srl_epi32(load_ints(words), shift), mask);
}

// The 8 columns of one word of AWQ's packing.
TENSORFS_TARGET inline __m256i awq_fields(const std::uint32_t* words) {
    const __m256i shifts = _mm256_setr_epi32(4 * kAwqField[0], 4 * kAwqField[1], 4 * kAwqField[2], 4 * kAwqField[3],
                                             4 * kAwqField[4], 4 * kAwqField[5], 4 * kAwqField[6], 4 * kAwqField[7]);
    return _mm256_and_si256(_mm256_srlv_epi32(splat(load_word(words, 0)), shifts), splat(15));
}

// --- transpose ---

// An 8 x 8 tile: rows of the source in, columns out.
TENSORFS_TARGET inline void transpose_square(const float* src, std::size_t src_stride, float* dst,
                                             std::size_t dst_stride) {
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_stride);
    // Pairs of rows interleaved: t[2k] = a0 b0 a1 b1 | a4 b4 a5 b5, t[2k + 1] = a2 b2 a3 b3 | a6 b6 a7 b7.
    for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    // Quads: u[4h + j] holds column j (low half) and j + 4 (high half) of rows 4h .. 4h + 3.
    for (int h = 0; h < 2; ++h) {
        u[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
        u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xEE);
        u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
        u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
    }
    for (int j = 0; j < 4; ++j) {
        _mm256_storeu_ps(dst + j * dst_stride, _mm256_permute2f128_ps(u[j], u[4 + j], 0x20));
        _mm256_storeu_ps(dst + (j + 4) * dst_stride, _mm256_permute2f128_ps(u[j], u[4 + j], 0x31));
    }
}

}  // namespace

#include "quantized_fast.inl"

}  // namespace tensorfs::quantized::avx2
