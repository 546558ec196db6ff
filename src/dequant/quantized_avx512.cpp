// The AVX-512 kernels of tensorfs/quantized_kernels.hpp (F, BW and VL, with AVX2 and F16C): the steps
// quantized_fast.inl walks rows with, for registers of 16 values (one NVFP4 group, half an MXFP4 one). As in
// quantized_avx2.cpp, each function carries the target attribute, and quantized_kernels.cpp picks these kernels only
// on a CPU that has the extensions.

// GCC 12's AVX-512 intrinsics hand their builtins a self-initialized "undefined" register, which
// -Wmaybe-uninitialized reports once they are inlined, and -Wuninitialized too for the shuffles of the transpose
// (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "quantized_scalar.hpp"
#include "quantized_variants.hpp"

#define TENSORFS_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c")))

namespace tensorfs::quantized::avx512 {
namespace {

constexpr std::size_t kLanes = 16;
using Floats = __m512;
using Ints = __m512i;

TENSORFS_TARGET inline Floats broadcast(float value) { return _mm512_set1_ps(value); }
TENSORFS_TARGET inline Ints splat(std::uint32_t value) { return _mm512_set1_epi32(static_cast<int>(value)); }
TENSORFS_TARGET inline Floats load_floats(const float* p) { return _mm512_loadu_ps(p); }
TENSORFS_TARGET inline Ints load_ints(const void* p) { return _mm512_loadu_si512(p); }

TENSORFS_TARGET inline __m128i load_8_bytes(const void* p) { return _mm_loadl_epi64(static_cast<const __m128i*>(p)); }
TENSORFS_TARGET inline __m128i load_16_bytes(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// The first 8 lanes from 32-bit lane 0 of `v`, the other 8 from lane 1.
TENSORFS_TARGET inline __m512i two_words_spread(__m128i v) {
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                    _mm512_castsi128_si512(v));
}

// --- FP8 E4M3 ---

// 16 E4M3 bytes times `scale`, as quantized_avx2.cpp's fp8_step: the code as a half, converted exactly and times
// 256, times the scale; NaN codes take their own NaN, sign | 0x7FC00000.
TENSORFS_TARGET inline void fp8_step(const std::uint8_t* w, __m512 scale, float* out) {
    const __m128i bytes = load_16_bytes(w);
    const __m256i codes = _mm256_cvtepu8_epi16(bytes);
    const __m256i sign = _mm256_and_si256(_mm256_slli_epi16(codes, 8), _mm256_set1_epi16(-0x8000));
    const __m256i halves =
        _mm256_or_si256(sign, _mm256_slli_epi16(_mm256_and_si256(codes, _mm256_set1_epi16(0x7F)), 7));
    __m512 values = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtph_ps(halves), _mm512_set1_ps(256.0f)), scale);
    const __mmask16 nan = _mm_cmpeq_epi8_mask(_mm_and_si128(bytes, _mm_set1_epi8(0x7F)), _mm_set1_epi8(0x7F));
    if (nan != 0) {
        // Sign-extended to 32 bits, a code keeps its sign in bit 31.
        const __m512i nans =
            _mm512_or_si512(_mm512_and_si512(_mm512_cvtepi8_epi32(bytes), splat(0x80000000u)), splat(0x7FC00000u));
        values = _mm512_mask_mov_ps(values, nan, _mm512_castsi512_ps(nans));
    }
    _mm512_storeu_ps(out, values);
}

// --- E2M1 (NVFP4, MXFP4) ---

TENSORFS_TARGET inline __m128i low_nibbles(__m128i bytes) { return _mm_and_si128(bytes, _mm_set1_epi8(0x0F)); }
TENSORFS_TARGET inline __m128i high_nibbles(__m128i bytes) {
    return _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0F));
}

// The 16 values of 8 packed bytes (each byte's low nibble, then its high one) times `scale`: one lookup of all 16
// codes (nibble 8 is -0.0).
TENSORFS_TARGET inline void e2m1_step(const std::uint8_t* packed, __m512 scale, float* out) {
    const __m512 values = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,  //
                                         -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
    const __m128i bytes = load_8_bytes(packed);
    const __m128i nibbles = _mm_unpacklo_epi8(low_nibbles(bytes), high_nibbles(bytes));
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_cvtepu8_epi32(nibbles), values), scale));
}

// --- integers ---

// out[0..16) = f32(q - zeros) * scales, unless a difference overflows 32 bits (see quantized_avx2.cpp).
TENSORFS_TARGET inline bool store_integers(__m512i q, __m512i zeros, __m512 scales, float* out) {
    const __m512i difference = _mm512_sub_epi32(q, zeros);
    if (_mm512_cmplt_epi32_mask(_mm512_and_si512(difference, zeros), _mm512_setzero_si512()) != 0) return false;
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_cvtepi32_ps(difference), scales));
    return true;
}

// Fields c .. c + 15 of a row packed along it, c a multiple of 16 (so that they lie in whole words).
template <unsigned kBits>
TENSORFS_TARGET inline __m512i packed_fields(const std::uint32_t* words, std::size_t c) {
    if constexpr (kBits == 8) {
        return _mm512_cvtepu8_epi32(load_16_bytes(words + c / 4));
    } else if constexpr (kBits == 4) {
        const __m512i shifts = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
        return _mm512_and_si512(_mm512_srlv_epi32(two_words_spread(load_8_bytes(words + c / 8)), shifts), splat(15));
    } else {
        const __m512i shifts = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        return _mm512_and_si512(_mm512_srlv_epi32(splat(load_word(words, c / 16)), shifts), splat(3));
    }
}

// (words[i] >> shift) & mask for 16 words.
TENSORFS_TARGET inline __m512i shifted_fields(const std::uint32_t* words, __m128i shift, __m512i mask) {
    return _mm512_and_si512(_mm512_srl_epi32(load_ints(words), shift), mask);
}

// The 16 columns of two words of AWQ's packing.
TENSORFS_TARGET inline __m512i awq_fields(const std::uint32_t* words) {
    const __m512i shifts = _mm512_broadcast_i64x4(_mm256_setr_epi32(4 * kAwqField[0], 4 * kAwqField[1],
                                                                     4 * kAwqField[2], 4 * kAwqField[3],
                                                                     4 * kAwqField[4], 4 * kAwqField[5],
                                                                     4 * kAwqField[6], 4 * kAwqField[7]));
    return _mm512_and_si512(_mm512_srlv_epi32(two_words_spread(load_8_bytes(words)), shifts), splat(15));
}

// --- transpose ---

// A 16 x 16 tile: rows of the source in, columns out.
TENSORFS_TARGET inline void transpose_square(const float* src, std::size_t src_stride, float* dst,
                                            std::size_t dst_stride) {
    __m512 r[16], t[16], u[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * src_stride);
        // Within each 128-bit lane, as in quantized_avx2.cpp's 8 x 8 tile: t interleaves pairs of rows, then u[4h + j]
        // holds, in lane k, column 4k + j of rows 4h .. 4h + 3.
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
        t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
#pragma GCC unroll 4
    for (int h = 0; h < 4; ++h) {
        u[4 * h] = _mm512_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
        u[4 * h + 1] = _mm512_shuffle_ps(t[4 * h], t[4 * h + 2], 0xEE);
        u[4 * h + 2] = _mm512_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
        u[4 * h + 3] = _mm512_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
    }
    // Column 4k + j gathers lane k of u[j], u[4 + j], u[8 + j], u[12 + j]: two rounds of lane shuffles, the first
    // pairing lanes 0 and 2 (0x88) or 1 and 3 (0xDD) of two registers, the second doing it again.
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
        const __m512 even_top = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88);
        const __m512 odd_top = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
        const __m512 even_bottom = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
        const __m512 odd_bottom = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
        _mm512_storeu_ps(dst + j * dst_stride, _mm512_shuffle_f32x4(even_top, even_bottom, 0x88));
        _mm512_storeu_ps(dst + (j + 8) * dst_stride, _mm512_shuffle_f32x4(even_top, even_bottom, 0xDD));
        _mm512_storeu_ps(dst + (j + 4) * dst_stride, _mm512_shuffle_f32x4(odd_top, odd_bottom, 0x88));
        _mm512_storeu_ps(dst + (j + 12) * dst_stride, _mm512_shuffle_f32x4(odd_top, odd_bottom, 0xDD));
    }
}

}  // namespace

#include "quantized_fast.inl"

}  // namespace tensorfs::quantized::avx512
