// AVX2 kernels for the 32-element block quants Q8_0 and Q4_0: one f16 scale d per block, values float(q) * d
// exactly as legacy_quants.cpp computes them.
#include "fast_simd.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

constexpr std::size_t kElements = 32;
constexpr std::size_t kQ8_0Bytes = 2 + 32;  // d, 32 signed bytes
constexpr std::size_t kQ4_0Bytes = 2 + 16;  // d, 32 nibbles

}  // namespace

TENSORFS_FAST_TARGET void q8_0_avx2(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += kQ8_0Bytes, dst += kElements) {
        const __m256 d = _mm256_set1_ps(fast::load_f16_scale(src));
        fast::store_32_scaled(fast::load_32_bytes(src + 2), d, dst);
    }
}

// Byte j holds element j in its low nibble and element j + 16 in its high nibble; values are nibble - 8.
TENSORFS_FAST_TARGET void q4_0_avx2(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m128i eight = _mm_set1_epi8(8);
    for (std::size_t b = 0; b < nblocks; ++b, src += kQ4_0Bytes, dst += kElements) {
        const __m256 d = _mm256_set1_ps(fast::load_f16_scale(src));
        const __m128i packed = fast::load_16_bytes(src + 2);
        fast::store_16_scaled(_mm_sub_epi8(fast::low_nibbles(packed), eight), d, dst);
        fast::store_16_scaled(_mm_sub_epi8(fast::high_nibbles(packed), eight), d, dst + 16);
    }
}

}  // namespace tensorfs::kernels
