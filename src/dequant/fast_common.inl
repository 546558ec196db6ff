// What every fast kernel family uses on both paths: byte loads and nibbles (AVX2 instructions, which the AVX-512
// path has too), 32-output forms of the simd_<path>.inl stores, and the walk of element-wise types in whole steps.
// Included by fast_avx2.cpp and fast_avx512.cpp after their simd_<path>.inl.

// An f16 field as float32 with the hardware conversion: the bits half.hpp's f16_to_f32 gives, for every pattern.
TENSORFS_TARGET inline float load_f16(const std::uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

TENSORFS_TARGET inline __m128i load8(const std::uint8_t* p) {
    return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
}
TENSORFS_TARGET inline __m128i load16(const std::uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
TENSORFS_TARGET inline __m256i load32(const std::uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// The low and high nibble of every byte, each as a byte 0..15.
TENSORFS_TARGET inline __m128i low_nibbles(__m128i bytes) { return _mm_and_si128(bytes, _mm_set1_epi8(0x0F)); }
TENSORFS_TARGET inline __m128i high_nibbles(__m128i bytes) {
    return _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0F));
}
TENSORFS_TARGET inline __m256i low_nibbles(__m256i bytes) { return _mm256_and_si256(bytes, _mm256_set1_epi8(0x0F)); }
TENSORFS_TARGET inline __m256i high_nibbles(__m256i bytes) {
    return _mm256_and_si256(_mm256_srli_epi16(bytes, 4), _mm256_set1_epi8(0x0F));
}

// Bits `shift` and `shift` + 1 of every byte, as a byte 0..3.
TENSORFS_TARGET inline __m256i bit_pairs(__m256i bytes, int shift) {
    return _mm256_and_si256(_mm256_srli_epi16(bytes, shift), _mm256_set1_epi8(3));
}

TENSORFS_TARGET inline __m128i low_half(__m256i v) { return _mm256_castsi256_si128(v); }
TENSORFS_TARGET inline __m128i high_half(__m256i v) { return _mm256_extracti128_si256(v, 1); }

// The 32-output forms: outputs 0..15 from the low 16 bytes of q, 16..31 from the high ones, one factor for all.
TENSORFS_TARGET inline void store32(__m256i q, Floats scale, float* dst) {
    store16(low_half(q), scale, dst);
    store16(high_half(q), scale, dst + 16);
}
TENSORFS_TARGET inline void store32_minus(__m256i q, Floats scale, Floats min, float* dst) {
    store16_minus(low_half(q), scale, min, dst);
    store16_minus(high_half(q), scale, min, dst + 16);
}
TENSORFS_TARGET inline void store32_negated(__m256i q, Floats scale, std::uint32_t negate, float* dst) {
    store16_negated(low_half(q), scale, negate & 0xFFFFu, dst);
    store16_negated(high_half(q), scale, negate >> 16, dst + 16);
}

// Runs `step`, which turns the bytes at its first argument into kStepOutputs floats, over `bytes` bytes of whole
// blocks, kStepBytes at a time. A step may load up to kLoadBytes (>= kStepBytes) bytes, so the last ones go
// through a zero-padded copy: no load or store leaves the caller's buffers. kStepBytes must hold whole blocks.
template <std::size_t kStepBytes, std::size_t kLoadBytes, std::size_t kStepOutputs,
          void (*step)(const std::uint8_t*, float*)>
TENSORFS_TARGET inline void in_steps(const std::uint8_t* src, std::size_t bytes, float* dst) {
    static_assert(kLoadBytes >= kStepBytes);
    std::size_t done = 0;
    for (; bytes - done >= kLoadBytes; done += kStepBytes, dst += kStepOutputs) step(src + done, dst);
    if (done == bytes) return;
    std::uint8_t padded[2 * kLoadBytes] = {};  // the rest is under kLoadBytes, and so is the last step's start
    std::memcpy(padded, src + done, bytes - done);
    for (std::size_t at = 0; done < bytes; at += kStepBytes, done += kStepBytes, dst += kStepOutputs) {
        float outputs[kStepOutputs];
        step(padded + at, outputs);
        const std::size_t step_bytes = std::min(kStepBytes, bytes - done);  // whole blocks
        std::memcpy(dst, outputs, step_bytes * kStepOutputs / kStepBytes * sizeof(float));
    }
}
