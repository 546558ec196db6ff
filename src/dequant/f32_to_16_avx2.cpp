// float32 -> bfloat16 / float16 with AVX2 and F16C (see tensorfs/f32_to_16.hpp for the rounding rules).
#include <immintrin.h>

#include "f32_to_16_variants.hpp"

#define TENSORFS_AVX2 __attribute__((target("avx2,f16c")))

namespace tensorfs::narrow {
namespace {

// bfloat16 of 8 floats in the low 16 bits of each 32-bit lane: the portable rounding, lane by lane.
TENSORFS_AVX2 inline __m256i bf16_lanes(__m256 values) {
    const __m256i bits = _mm256_castps_si256(values);
    const __m256i lowest_kept = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lowest_kept);
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, bias), 16);
    const __m256 nan = _mm256_cmp_ps(values, values, _CMP_UNORD_Q);
    return _mm256_blendv_epi8(rounded, _mm256_set1_epi32(0x7FC0), _mm256_castps_si256(nan));
}

}  // namespace

TENSORFS_AVX2 void bf16_avx2(const float* src, std::size_t count, std::uint16_t* dst) {
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        const __m256i low = bf16_lanes(_mm256_loadu_ps(src + i));
        const __m256i high = bf16_lanes(_mm256_loadu_ps(src + i + 8));
        // packus works within 128-bit halves: reorder the 64-bit quarters back into element order.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(low, high), 0xD8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), packed);
    }
    bf16_portable(src + i, count - i, dst + i);
}

TENSORFS_AVX2 void f16_avx2(const float* src, std::size_t count, std::uint16_t* dst) {
    std::size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const __m256 values = _mm256_loadu_ps(src + i);
        // vcvtps2ph makes a NaN quiet, numpy does not: groups with a NaN take the portable road.
        if (_mm256_movemask_ps(_mm256_cmp_ps(values, values, _CMP_UNORD_Q)) != 0) {
            f16_portable(src + i, 8, dst + i);
            continue;
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT));
    }
    f16_portable(src + i, count - i, dst + i);
}

}  // namespace tensorfs::narrow
