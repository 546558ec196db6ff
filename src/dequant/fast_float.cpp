// AVX2/F16C kernels for the 16-bit float element types F16 and BF16 (GGUF and safetensors alike).
// F16 uses the hardware conversion, which is exact for every pattern and, like ggml's to_float, sets the quiet
// bit of a signalling NaN while keeping the rest of its payload. BF16 is a 16-bit shift, as in ggml.
#include "fast_simd.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

constexpr std::size_t kLanes = 8;  // 16-bit values per 128-bit load, floats per 256-bit store

TENSORFS_FAST_TARGET inline void f16x8(const std::uint8_t* src, float* dst) {
    _mm256_storeu_ps(dst, _mm256_cvtph_ps(fast::load_16_bytes(src)));
}

TENSORFS_FAST_TARGET inline void bf16x8(const std::uint8_t* src, float* dst) {
    const __m256i widened = _mm256_cvtepu16_epi32(fast::load_16_bytes(src));
    _mm256_storeu_ps(dst, _mm256_castsi256_ps(_mm256_slli_epi32(widened, 16)));
}

// Runs `convert8` over n values, 8 at a time; the last n % 8 go through a zero-padded copy so that no load
// or store leaves the caller's buffers.
template <void (*convert8)(const std::uint8_t*, float*)>
TENSORFS_FAST_TARGET inline void convert_all(const std::uint8_t* src, std::size_t n, float* dst) {
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) convert8(src + 2 * i, dst + i);
    const std::size_t rest = n - i;
    if (rest == 0) return;
    std::uint8_t padded_src[2 * kLanes] = {};
    float padded_dst[kLanes];
    std::memcpy(padded_src, src + 2 * i, 2 * rest);
    convert8(padded_src, padded_dst);
    std::memcpy(dst + i, padded_dst, rest * sizeof(float));
}

}  // namespace

TENSORFS_FAST_TARGET void f16_avx2(const std::uint8_t* src, std::size_t n, float* dst) {
    convert_all<f16x8>(src, n, dst);
}

TENSORFS_FAST_TARGET void bf16_avx2(const std::uint8_t* src, std::size_t n, float* dst) {
    convert_all<bf16x8>(src, n, dst);
}

}  // namespace tensorfs::kernels
