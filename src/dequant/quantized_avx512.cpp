// The AVX-512 kernels of tensorfs/quantized_kernels.hpp (F, BW and VL, with AVX2 and F16C), 16 values per
// register. As in quantized_avx2.cpp, whose comments say how each value keeps the portable kernels' bits: each
// function carries the target attribute, quantized_kernels.cpp picks them only on a CPU that has the extensions,
// and the values a whole register cannot take go to the portable kernels or their steps.

// GCC 12's AVX-512 intrinsics hand their builtins a self-initialized "undefined" register, which
// -Wmaybe-uninitialized reports once they are inlined, and -Wuninitialized too for the shuffles of the transpose
// (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "quantized_scalar.hpp"
#include "quantized_variants.hpp"

#define TENSORFS_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c")))

namespace tensorfs::quantized::avx512 {
namespace {

TENSORFS_AVX512 inline __m512i splat(std::uint32_t value) { return _mm512_set1_epi32(static_cast<int>(value)); }

TENSORFS_AVX512 inline __m128i load_8_bytes(const void* p) { return _mm_loadl_epi64(static_cast<const __m128i*>(p)); }
TENSORFS_AVX512 inline __m128i load_16_bytes(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// The first 8 lanes from 32-bit lane 0 of `v`, the other 8 from lane 1.
TENSORFS_AVX512 inline __m512i two_words_spread(__m128i v) {
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                    _mm512_castsi128_si512(v));
}

// --- FP8 E4M3 ---

// 16 E4M3 bytes times `scale`, as quantized_avx2.cpp's fp8_step: the code as a half, converted exactly and times
// 256, times the scale; NaN codes take their own NaN, sign | 0x7FC00000.
TENSORFS_AVX512 inline void fp8_step(const std::uint8_t* w, __m512 scale, float* out) {
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

// The E2M1 values of 16 nibble bytes, in order, times `scale`: one lookup of all 16 codes (nibble 8 is -0.0).
TENSORFS_AVX512 inline void e2m1_step(__m128i nibbles, __m512 scale, float* out) {
    const __m512 values = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,  //
                                         -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_cvtepu8_epi32(nibbles), values), scale));
}

TENSORFS_AVX512 inline __m128i low_nibbles(__m128i bytes) { return _mm_and_si128(bytes, _mm_set1_epi8(0x0F)); }
TENSORFS_AVX512 inline __m128i high_nibbles(__m128i bytes) {
    return _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0F));
}

// --- integers ---

// out[0..16) = f32(q - zeros) * scales, unless a difference overflows 32 bits (see quantized_avx2.cpp).
TENSORFS_AVX512 inline bool store_integers(__m512i q, __m512i zeros, __m512 scales, float* out) {
    const __m512i difference = _mm512_sub_epi32(q, zeros);
    if (_mm512_cmplt_epi32_mask(_mm512_and_si512(difference, zeros), _mm512_setzero_si512()) != 0) return false;
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_cvtepi32_ps(difference), scales));
    return true;
}

// Fields c .. c + 15 of a row packed along it, c a multiple of 16 (so that they lie in whole words).
template <unsigned kBits>
TENSORFS_AVX512 inline __m512i packed_fields(const std::uint32_t* words, std::size_t c) {
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

template <unsigned kBits>
TENSORFS_AVX512 void packed_groups(const std::uint32_t* words, std::size_t n, const std::int32_t* zeros,
                                   const float* scales, std::size_t group, float* out) {
    for (std::size_t start = 0, g = 0; start < n; ++g) {
        const std::size_t end = group_end(start, group, n);
        std::size_t c = std::min(end, (start + 15) / 16 * 16);
        packed_values(words, start, c, kBits, zeros[g], scales[g], out);
        const __m512i zero = splat(static_cast<std::uint32_t>(zeros[g]));
        const __m512 scale = _mm512_set1_ps(scales[g]);
        for (; c + 16 <= end; c += 16) {
            if (!store_integers(packed_fields<kBits>(words, c), zero, scale, out + c)) {
                packed_values(words, c, c + 16, kBits, zeros[g], scales[g], out);
            }
        }
        packed_values(words, c, end, kBits, zeros[g], scales[g], out);
        start = end;
    }
}

// --- transpose ---

// A 16 x 16 tile: rows of the source in, columns out.
TENSORFS_AVX512 inline void transpose_16x16(const float* src, std::size_t src_stride, float* dst,
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

TENSORFS_AVX512 void fp8_e4m3_scaled(const std::uint8_t* w, std::size_t n, const float* scales, std::size_t block,
                                     float* out) {
    if (block < 16) return portable::fp8_e4m3_scaled(w, n, scales, block, out);  // no whole register per scale
    for (std::size_t start = 0, b = 0; start < n; ++b) {
        const std::size_t end = group_end(start, block, n);
        const __m512 scale = _mm512_set1_ps(scales[b]);
        std::size_t c = start;
        for (; c + 16 <= end; c += 16) fp8_step(w + c, scale, out + c);
        if (c < end) portable::fp8_e4m3_scaled(w + c, end - c, scales + b, block, out + c);
        start = end;
    }
}

TENSORFS_AVX512 void nvfp4_scaled(const std::uint8_t* packed, std::size_t n, const float* scales, float* out) {
    std::size_t c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m128i bytes = load_8_bytes(packed + c / 2);
        e2m1_step(_mm_unpacklo_epi8(low_nibbles(bytes), high_nibbles(bytes)), _mm512_set1_ps(scales[c / 16]), out + c);
    }
    portable::nvfp4_scaled(packed + c / 2, n - c, scales + c / 16, out + c);
}

TENSORFS_AVX512 void mxfp4_scaled(const std::uint8_t* packed, std::size_t n, const std::uint8_t* exponents,
                                  float* out) {
    std::size_t c = 0;
    for (; c + 32 <= n; c += 32) {
        const std::uint8_t e = exponents[c / 32];
        if (e == kMxNanExponent) {
            std::fill(out + c, out + c + 32, std::bit_cast<float>(kMxNanBits));
            continue;
        }
        const __m512 scale = _mm512_set1_ps(mx_scale(e));
        const __m128i bytes = load_16_bytes(packed + c / 2);
        const __m128i low = low_nibbles(bytes), high = high_nibbles(bytes);
        e2m1_step(_mm_unpacklo_epi8(low, high), scale, out + c);
        e2m1_step(_mm_unpackhi_epi8(low, high), scale, out + c + 16);
    }
    portable::mxfp4_scaled(packed + c / 2, n - c, exponents + c / 32, out + c);
}

TENSORFS_AVX512 void packed_along_row(const std::uint32_t* words, std::size_t n, unsigned bits,
                                      const std::int32_t* zeros, const float* scales, std::size_t group, float* out) {
    switch (bits) {
        case 2:
            return packed_groups<2>(words, n, zeros, scales, group, out);
        case 4:
            return packed_groups<4>(words, n, zeros, scales, group, out);
        default:
            return packed_groups<8>(words, n, zeros, scales, group, out);
    }
}

TENSORFS_AVX512 void field_of_words(const std::uint32_t* words, std::size_t n, unsigned shift, unsigned bits,
                                    const std::int32_t* zeros, const float* scales, float* out) {
    const __m128i count = _mm_cvtsi32_si128(static_cast<int>(shift));
    const __m512i mask = splat((1u << bits) - 1);
    std::size_t c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m512i q = _mm512_and_si512(_mm512_srl_epi32(_mm512_loadu_si512(words + c), count), mask);
        if (!store_integers(q, _mm512_loadu_si512(zeros + c), _mm512_loadu_ps(scales + c), out + c)) {
            portable::field_of_words(words + c, 16, shift, bits, zeros + c, scales + c, out + c);
        }
    }
    portable::field_of_words(words + c, n - c, shift, bits, zeros + c, scales + c, out + c);
}

TENSORFS_AVX512 void awq_row(const std::uint32_t* words, std::size_t n, const std::int32_t* zeros, const float* scales,
                             float* out) {
    const __m512i shifts = _mm512_broadcast_i64x4(
        _mm256_setr_epi32(4 * kAwqField[0], 4 * kAwqField[1], 4 * kAwqField[2], 4 * kAwqField[3], 4 * kAwqField[4],
                          4 * kAwqField[5], 4 * kAwqField[6], 4 * kAwqField[7]));
    std::size_t c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m512i q =
            _mm512_and_si512(_mm512_srlv_epi32(two_words_spread(load_8_bytes(words + c / 8)), shifts), splat(15));
        if (!store_integers(q, _mm512_loadu_si512(zeros + c), _mm512_loadu_ps(scales + c), out + c)) {
            portable::awq_row(words + c / 8, 16, zeros + c, scales + c, out + c);
        }
    }
    portable::awq_row(words + c / 8, n - c, zeros + c, scales + c, out + c);
}

TENSORFS_AVX512 void transpose(const float* src, std::size_t rows, std::size_t cols, float* dst) {
    // The blocks of quantized_scalar.hpp in 16 x 16 tiles; the rows and columns left over from whole tiles go value
    // by value.
    const std::size_t whole_rows = rows / 16 * 16, whole_cols = cols / 16 * 16;
    for (std::size_t block_row = 0; block_row < whole_rows; block_row += kTransposeBlockRows) {
        const std::size_t row_end = std::min(block_row + kTransposeBlockRows, whole_rows);
        for (std::size_t block_col = 0; block_col < whole_cols; block_col += kTransposeBlockCols) {
            const std::size_t col_end = std::min(block_col + kTransposeBlockCols, whole_cols);
            for (std::size_t c = block_col; c < col_end; c += 16) {
                for (std::size_t r = block_row; r < row_end; r += 16) {
                    transpose_16x16(src + r * cols + c, cols, dst + c * rows + r, rows);
                }
            }
        }
    }
    transpose_tile(src + whole_cols, cols, whole_rows, cols - whole_cols, dst + whole_cols * rows, rows);
    transpose_tile(src + whole_rows * cols, cols, rows - whole_rows, cols, dst + whole_rows, rows);
}

}  // namespace tensorfs::quantized::avx512
