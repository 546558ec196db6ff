// Building blocks shared by the AVX2 dequant kernels (fast_*.cpp). Only functions compiled for the
// "avx2,f16c,fma" target may call these; the rest of the binary stays plain x86-64, and type_table.cpp's
// active_kernel() only picks a fast kernel on a CPU that has those extensions.
//
// Bit-exactness with the portable kernels: every helper converts small integers to float exactly and
// then rounds one multiply (and one subtract) per element, in the same order as the portable code.
// The project builds with -ffp-contract=off, which also keeps GCC from fusing the vector multiply and
// subtract below into an FMA (GCC implements these intrinsics as plain vector arithmetic).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#define TENSORFS_FAST_TARGET __attribute__((target("avx2,f16c,fma")))

namespace tensorfs::fast {

// An f16 scale field as float32, with the hardware conversion. It equals half.hpp's f16_to_f32 for
// every non-NaN pattern; a NaN scale makes every product NaN either way.
TENSORFS_FAST_TARGET inline float load_f16_scale(const std::uint8_t* p) {
    std::uint16_t h;
    std::memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

TENSORFS_FAST_TARGET inline __m128i load_16_bytes(const std::uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
TENSORFS_FAST_TARGET inline __m256i load_32_bytes(const std::uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Low and high nibbles of every byte, each as a byte 0..15.
TENSORFS_FAST_TARGET inline __m128i low_nibbles(__m128i bytes) { return _mm_and_si128(bytes, _mm_set1_epi8(0x0F)); }
TENSORFS_FAST_TARGET inline __m128i high_nibbles(__m128i bytes) {
    return _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0F));
}
TENSORFS_FAST_TARGET inline __m256i low_nibbles(__m256i bytes) {
    return _mm256_and_si256(bytes, _mm256_set1_epi8(0x0F));
}
TENSORFS_FAST_TARGET inline __m256i high_nibbles(__m256i bytes) {
    return _mm256_and_si256(_mm256_srli_epi16(bytes, 4), _mm256_set1_epi8(0x0F));
}

// The low 8 signed bytes of `q` as 8 floats (exact).
TENSORFS_FAST_TARGET inline __m256 first_8_as_floats(__m128i q) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
}

// dst[i] = float(q[i]) * scale for the 16 signed bytes of q.
TENSORFS_FAST_TARGET inline void store_16_scaled(__m128i q, __m256 scale, float* dst) {
    _mm256_storeu_ps(dst, _mm256_mul_ps(first_8_as_floats(q), scale));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(first_8_as_floats(_mm_unpackhi_epi64(q, q)), scale));
}

// dst[i] = float(q[i]) * scale for the 32 signed bytes of q.
TENSORFS_FAST_TARGET inline void store_32_scaled(__m256i q, __m256 scale, float* dst) {
    store_16_scaled(_mm256_castsi256_si128(q), scale, dst);
    store_16_scaled(_mm256_extracti128_si256(q, 1), scale, dst + 16);
}

// dst[i] = float(q[i]) * scale - min for the 32 signed bytes of q: two roundings, as ggml.
TENSORFS_FAST_TARGET inline void store_32_scaled_minus(__m256i q, __m256 scale, __m256 min, float* dst) {
    const __m128i halves[2] = {_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)};
    for (int h = 0; h < 2; ++h, dst += 16) {
        const __m256 low = _mm256_mul_ps(first_8_as_floats(halves[h]), scale);
        const __m256 high = _mm256_mul_ps(first_8_as_floats(_mm_unpackhi_epi64(halves[h], halves[h])), scale);
        _mm256_storeu_ps(dst, _mm256_sub_ps(low, min));
        _mm256_storeu_ps(dst + 8, _mm256_sub_ps(high, min));
    }
}

}  // namespace tensorfs::fast
