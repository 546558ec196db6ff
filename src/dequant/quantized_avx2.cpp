// The AVX2 kernels of tensorfs/quantized_kernels.hpp (AVX2 and F16C), 8 values per register. Each function carries
// the target attribute (as in fast_avx2.cpp), and quantized_kernels.cpp picks them only on a CPU that has the
// extensions.
//
// Bit-exactness with the portable kernels (quantized_rows.cpp): every value is the same one product of the same two
// floats (the build never fuses a multiply with anything), integers convert to float exactly or with the same
// rounding to nearest, and the values a whole register cannot take (row ends, groups that start or end inside a
// register, zero points that make the 32-bit difference overflow) go to the portable kernels or their steps.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "quantized_scalar.hpp"
#include "quantized_variants.hpp"

#define TENSORFS_AVX2 __attribute__((target("avx2,f16c")))

namespace tensorfs::quantized::avx2 {
namespace {

TENSORFS_AVX2 inline __m256i splat(std::uint32_t value) { return _mm256_set1_epi32(static_cast<int>(value)); }

TENSORFS_AVX2 inline __m128i load_8_bytes(const void* p) { return _mm_loadl_epi64(static_cast<const __m128i*>(p)); }

// --- FP8 E4M3 ---

// The NaN of each code, sign | 0x7FC00000, in the lanes that `nan` marks; `values` in the others. 8 lanes from the
// low 8 bytes of `codes` and `nan` (0xFF where the code is a NaN).
TENSORFS_AVX2 inline __m256 with_fp8_nans(__m256 values, __m128i codes, __m128i nan) {
    // Sign-extended to 32 bits, a code keeps its sign in bit 31, and a byte of `nan` fills its lane.
    const __m256i sign = _mm256_and_si256(_mm256_cvtepi8_epi32(codes), splat(0x80000000u));
    const __m256 nans = _mm256_castsi256_ps(_mm256_or_si256(sign, splat(0x7FC00000u)));
    return _mm256_blendv_ps(values, nans, _mm256_castsi256_ps(_mm256_cvtepi8_epi32(nan)));
}

// 16 E4M3 bytes times `scale`. Each code's fields move into an IEEE half (sign to bit 15, exponent and mantissa
// shifted left by 7), whose exact conversion is the value times 2^-8, and an exact product by 256 restores the value
// (as fast_small_floats.inl decodes F8_E4M3). NaN codes (S.1111.111) then take their own NaN whatever the scale
// (quantized_scalar.hpp's fp8_product).
TENSORFS_AVX2 inline void fp8_step(const std::uint8_t* w, __m256 scale, float* out) {
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
TENSORFS_AVX2 inline __m256 e2m1_values(__m256i nibbles) {
    const __m256 magnitudes = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(nibbles, splat(8)), 28);
    return _mm256_xor_ps(_mm256_permutevar8x32_ps(magnitudes, nibbles), _mm256_castsi256_ps(sign));
}

// The 16 nibbles of 8 bytes as bytes, in value order: each byte's low nibble, then its high one.
TENSORFS_AVX2 inline __m128i nibbles_in_order(__m128i bytes) {
    const __m128i low = _mm_and_si128(bytes, _mm_set1_epi8(0x0F));
    const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0F));
    return _mm_unpacklo_epi8(low, high);
}

// The 16 values of 8 packed bytes times `scale`.
TENSORFS_AVX2 inline void e2m1_step(__m128i bytes, __m256 scale, float* out) {
    const __m128i nibbles = nibbles_in_order(bytes);
    _mm256_storeu_ps(out, _mm256_mul_ps(e2m1_values(_mm256_cvtepu8_epi32(nibbles)), scale));
    _mm256_storeu_ps(out + 8, _mm256_mul_ps(e2m1_values(_mm256_cvtepu8_epi32(_mm_srli_si128(nibbles, 8))), scale));
}

// --- integers ---

// out[0..8) = f32(q - zeros) * scales, unless a difference overflows 32 bits (false: nothing is stored). q >= 0,
// so the wrapped difference is wrong exactly when the zero point is negative and the difference came out negative.
TENSORFS_AVX2 inline bool store_integers(__m256i q, __m256i zeros, __m256 scales, float* out) {
    const __m256i difference = _mm256_sub_epi32(q, zeros);
    if (_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(difference, zeros))) != 0) return false;
    _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_cvtepi32_ps(difference), scales));
    return true;
}

// Fields c .. c + 7 of a row packed along it, c a multiple of 8 (so that they lie in whole words).
template <unsigned kBits>
TENSORFS_AVX2 inline __m256i packed_fields(const std::uint32_t* words, std::size_t c) {
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

template <unsigned kBits>
TENSORFS_AVX2 void packed_groups(const std::uint32_t* words, std::size_t n, const std::int32_t* zeros,
                                 const float* scales, std::size_t group, float* out) {
    for (std::size_t start = 0, g = 0; start < n; ++g) {
        const std::size_t end = group_end(start, group, n);
        std::size_t c = std::min(end, (start + 7) / 8 * 8);
        packed_values(words, start, c, kBits, zeros[g], scales[g], out);
        const __m256i zero = splat(static_cast<std::uint32_t>(zeros[g]));
        const __m256 scale = _mm256_set1_ps(scales[g]);
        for (; c + 8 <= end; c += 8) {
            if (!store_integers(packed_fields<kBits>(words, c), zero, scale, out + c)) {
                packed_values(words, c, c + 8, kBits, zeros[g], scales[g], out);
            }
        }
        packed_values(words, c, end, kBits, zeros[g], scales[g], out);
        start = end;
    }
}

// --- transpose ---

// An 8 x 8 tile: rows of the source in, columns out.
TENSORFS_AVX2 inline void transpose_8x8(const float* src, std::size_t src_stride, float* dst, std::size_t dst_stride) {
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

TENSORFS_AVX2 void fp8_e4m3_scaled(const std::uint8_t* w, std::size_t n, const float* scales, std::size_t block,
                                   float* out) {
    if (block < 16) return portable::fp8_e4m3_scaled(w, n, scales, block, out);  // no whole register per scale
    for (std::size_t start = 0, b = 0; start < n; ++b) {
        const std::size_t end = group_end(start, block, n);
        const __m256 scale = _mm256_set1_ps(scales[b]);
        std::size_t c = start;
        for (; c + 16 <= end; c += 16) fp8_step(w + c, scale, out + c);
        if (c < end) portable::fp8_e4m3_scaled(w + c, end - c, scales + b, block, out + c);
        start = end;
    }
}

TENSORFS_AVX2 void nvfp4_scaled(const std::uint8_t* packed, std::size_t n, const float* scales, float* out) {
    std::size_t c = 0;
    for (; c + 16 <= n; c += 16) e2m1_step(load_8_bytes(packed + c / 2), _mm256_set1_ps(scales[c / 16]), out + c);
    portable::nvfp4_scaled(packed + c / 2, n - c, scales + c / 16, out + c);
}

TENSORFS_AVX2 void mxfp4_scaled(const std::uint8_t* packed, std::size_t n, const std::uint8_t* exponents, float* out) {
    std::size_t c = 0;
    for (; c + 32 <= n; c += 32) {
        const std::uint8_t e = exponents[c / 32];
        if (e == kMxNanExponent) {
            std::fill(out + c, out + c + 32, std::bit_cast<float>(kMxNanBits));
            continue;
        }
        const __m256 scale = _mm256_set1_ps(mx_scale(e));
        e2m1_step(load_8_bytes(packed + c / 2), scale, out + c);
        e2m1_step(load_8_bytes(packed + c / 2 + 8), scale, out + c + 16);
    }
    portable::mxfp4_scaled(packed + c / 2, n - c, exponents + c / 32, out + c);
}

TENSORFS_AVX2 void packed_along_row(const std::uint32_t* words, std::size_t n, unsigned bits, const std::int32_t* zeros,
                                    const float* scales, std::size_t group, float* out) {
    switch (bits) {
        case 2:
            return packed_groups<2>(words, n, zeros, scales, group, out);
        case 4:
            return packed_groups<4>(words, n, zeros, scales, group, out);
        default:
            return packed_groups<8>(words, n, zeros, scales, group, out);
    }
}

TENSORFS_AVX2 void field_of_words(const std::uint32_t* words, std::size_t n, unsigned shift, unsigned bits,
                                  const std::int32_t* zeros, const float* scales, float* out) {
    const __m128i count = _mm_cvtsi32_si128(static_cast<int>(shift));
    const __m256i mask = splat((1u << bits) - 1);
    std::size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        const __m256i q = _mm256_and_si256(
            _mm256_srl_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + c)), count), mask);
        const __m256i zero = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zeros + c));
        if (!store_integers(q, zero, _mm256_loadu_ps(scales + c), out + c)) {
            portable::field_of_words(words + c, 8, shift, bits, zeros + c, scales + c, out + c);
        }
    }
    portable::field_of_words(words + c, n - c, shift, bits, zeros + c, scales + c, out + c);
}

TENSORFS_AVX2 void awq_row(const std::uint32_t* words, std::size_t n, const std::int32_t* zeros, const float* scales,
                           float* out) {
    const __m256i shifts = _mm256_setr_epi32(4 * kAwqField[0], 4 * kAwqField[1], 4 * kAwqField[2], 4 * kAwqField[3],
                                             4 * kAwqField[4], 4 * kAwqField[5], 4 * kAwqField[6], 4 * kAwqField[7]);
    std::size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        const __m256i q = _mm256_and_si256(_mm256_srlv_epi32(splat(load_word(words, c / 8)), shifts), splat(15));
        const __m256i zero = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zeros + c));
        if (!store_integers(q, zero, _mm256_loadu_ps(scales + c), out + c)) {
            portable::awq_row(words + c / 8, 8, zeros + c, scales + c, out + c);
        }
    }
    portable::awq_row(words + c / 8, n - c, zeros + c, scales + c, out + c);
}

TENSORFS_AVX2 void transpose(const float* src, std::size_t rows, std::size_t cols, float* dst) {
    // The blocks of quantized_scalar.hpp in 8 x 8 tiles; the rows and columns left over from whole tiles go value
    // by value.
    const std::size_t whole_rows = rows / 8 * 8, whole_cols = cols / 8 * 8;
    for (std::size_t block_row = 0; block_row < whole_rows; block_row += kTransposeBlockRows) {
        const std::size_t row_end = std::min(block_row + kTransposeBlockRows, whole_rows);
        for (std::size_t block_col = 0; block_col < whole_cols; block_col += kTransposeBlockCols) {
            const std::size_t col_end = std::min(block_col + kTransposeBlockCols, whole_cols);
            for (std::size_t c = block_col; c < col_end; c += 8) {
                for (std::size_t r = block_row; r < row_end; r += 8) {
                    transpose_8x8(src + r * cols + c, cols, dst + c * rows + r, rows);
                }
            }
        }
    }
    transpose_tile(src + whole_cols, cols, whole_rows, cols - whole_cols, dst + whole_cols * rows, rows);
    transpose_tile(src + whole_rows * cols, cols, rows - whole_rows, cols, dst + whole_rows, rows);
}

}  // namespace tensorfs::quantized::avx2
