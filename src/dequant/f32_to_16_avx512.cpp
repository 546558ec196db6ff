// float32 -> bfloat16 / float16 with AVX-512 (see tensorfs/f32_to_16.hpp for the rounding rules).
//
// bfloat16 uses the AVX512_BF16 instruction vcvtne2ps2bf16, which rounds to nearest even like PyTorch but treats
// subnormal inputs as zero and keeps a NaN's sign and payload; a group of 32 values holding a subnormal or a NaN
// takes the integer rounding instead (as the portable code does). On 16 K values in the L1 cache (the amount a
// 16-bit view rounds at a time) the instruction converts 1.6 to 3 times as fast as the integer rounding
// (bench/bench_narrow, docs/benchmarks.md); from memory both run at memory speed.
// GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized on their own _mm512_undefined_* placeholders (GCC bug
// 105593); the warning points into the header, so it is silenced before the header is read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "f32_to_16_variants.hpp"

#define TENSORFS_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace tensorfs::narrow {
namespace {

TENSORFS_AVX512 inline __m256i bf16_by_integers(__m512 values) {
    const __m512i bits = _mm512_castps_si512(values);
    const __m512i lowest_kept = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lowest_kept);
    __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, bias), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(values, values, _CMP_UNORD_Q);
    rounded = _mm512_mask_blend_epi32(nan, rounded, _mm512_set1_epi32(0x7FC0));
    return _mm512_cvtepi32_epi16(rounded);
}

// Lanes the instruction would get wrong: a nonzero magnitude below the smallest normal, or a NaN.
TENSORFS_AVX512 inline __mmask16 needs_integer_rounding(__m512 values) {
    const __m512i magnitude = _mm512_and_si512(_mm512_castps_si512(values), _mm512_set1_epi32(0x7FFFFFFF));
    const __mmask16 subnormal =
        _mm512_cmplt_epu32_mask(_mm512_sub_epi32(magnitude, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7FFFFF));
    return subnormal | _mm512_cmpgt_epu32_mask(magnitude, _mm512_set1_epi32(0x7F800000));
}

}  // namespace

TENSORFS_AVX512 void bf16_avx512(const float* src, std::size_t count, std::uint16_t* dst) {
    std::size_t i = 0;
    for (; i + 32 <= count; i += 32) {
        const __m512 low = _mm512_loadu_ps(src + i);
        const __m512 high = _mm512_loadu_ps(src + i + 16);
        if ((needs_integer_rounding(low) | needs_integer_rounding(high)) == 0) {
            const __m512bh converted = _mm512_cvtne2ps_pbh(high, low);
            std::memcpy(dst + i, &converted, sizeof converted);
        } else {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), bf16_by_integers(low));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i + 16), bf16_by_integers(high));
        }
    }
    bf16_portable(src + i, count - i, dst + i);
}

TENSORFS_AVX512 void f16_avx512(const float* src, std::size_t count, std::uint16_t* dst) {
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        const __m512 values = _mm512_loadu_ps(src + i);
        // vcvtps2ph makes a NaN quiet, numpy does not: groups with a NaN take the portable road.
        if (_mm512_cmp_ps_mask(values, values, _CMP_UNORD_Q) != 0) {
            f16_portable(src + i, 16, dst + i);
            continue;
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                            _mm512_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    f16_portable(src + i, count - i, dst + i);
}

}  // namespace tensorfs::narrow
