// The AVX2 path's way of turning small integers and 16-bit floats into float32 outputs: 8 lanes per register, so
// 16 outputs are two conversions, two products and two stores. fast_avx2.cpp includes this inside namespace
// tensorfs::kernels::avx2, before the kernel families (fast_*.inl): they do their byte work with AVX2 instructions,
// which both paths have, and produce every output through the functions here. simd_avx512.inl declares the same
// functions for the AVX-512 path.
//
// Bit-exactness: a small integer converts to float exactly; each output then gets the same one product (and the
// same one sum or difference) as in the portable kernels, rounded on its own: the project builds with
// -ffp-contract=off, which keeps GCC and clang from fusing them into an FMA. A negation flips the sign bit, as the
// portable kernels' unary minus does, so NaN outputs get the same sign too.

using Floats = __m256;  // one factor (a block's scale, offset or min) in every lane

TENSORFS_TARGET inline Floats broadcast(float value) { return _mm256_set1_ps(value); }

namespace simd {

// Per value of a sign byte, the sign bit of each of 8 lanes that its bits 0..7 set: a load instead of the
// broadcast, shift and mask that computing it takes.
constexpr auto make_negate_lanes() {
    std::array<std::array<std::uint32_t, 8>, 256> lanes{};
    for (unsigned byte = 0; byte < 256; ++byte) {
        for (unsigned j = 0; j < 8; ++j) lanes[byte][j] = ((byte >> j) & 1u) != 0 ? 0x80000000u : 0u;
    }
    return lanes;
}
alignas(32) inline constexpr auto kNegateLanes = make_negate_lanes();

TENSORFS_TARGET inline __m256 negate_where(__m256 values, unsigned bits8) {
    return _mm256_xor_ps(values, _mm256_load_ps(reinterpret_cast<const float*>(kNegateLanes[bits8 & 0xFFu].data())));
}

// The first and the second 8 signed bytes of q as floats.
TENSORFS_TARGET inline __m256 low8(__m128i q) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)); }
TENSORFS_TARGET inline __m256 high8(__m128i q) { return low8(_mm_srli_si128(q, 8)); }

}  // namespace simd

// dst[i] = float(q[i]) * scale for the 16 signed bytes of q.
TENSORFS_TARGET inline void store16(__m128i q, Floats scale, float* dst) {
    _mm256_storeu_ps(dst, _mm256_mul_ps(simd::low8(q), scale));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(simd::high8(q), scale));
}

// dst[i] = float(q[i]) * scale - min.
TENSORFS_TARGET inline void store16_minus(__m128i q, Floats scale, Floats min, float* dst) {
    _mm256_storeu_ps(dst, _mm256_sub_ps(_mm256_mul_ps(simd::low8(q), scale), min));
    _mm256_storeu_ps(dst + 8, _mm256_sub_ps(_mm256_mul_ps(simd::high8(q), scale), min));
}

// dst[i] = float(q[i]) * scale + offset.
TENSORFS_TARGET inline void store16_plus(__m128i q, Floats scale, Floats offset, float* dst) {
    _mm256_storeu_ps(dst, _mm256_add_ps(_mm256_mul_ps(simd::low8(q), scale), offset));
    _mm256_storeu_ps(dst + 8, _mm256_add_ps(_mm256_mul_ps(simd::high8(q), scale), offset));
}

// dst[i] = float(q[i]) * scale, negated where bit i of `negate` is set.
TENSORFS_TARGET inline void store16_negated(__m128i q, Floats scale, unsigned negate, float* dst) {
    _mm256_storeu_ps(dst, simd::negate_where(_mm256_mul_ps(simd::low8(q), scale), negate));
    _mm256_storeu_ps(dst + 8, simd::negate_where(_mm256_mul_ps(simd::high8(q), scale), negate >> 8));
}

// dst[i] = value, negated where bit i of `negate` is set.
TENSORFS_TARGET inline void store16_value_negated(Floats value, unsigned negate, float* dst) {
    _mm256_storeu_ps(dst, simd::negate_where(value, negate));
    _mm256_storeu_ps(dst + 8, simd::negate_where(value, negate >> 8));
}

// dst[i] = the IEEE half-precision value whose bits are 16-bit lane i of `halves` (exact, NaN payloads kept and
// made quiet, as ggml's F16 conversion does), times `factor` in the second form.
TENSORFS_TARGET inline void store16_f16(__m256i halves, float* dst) {
    _mm256_storeu_ps(dst, _mm256_cvtph_ps(_mm256_castsi256_si128(halves)));
    _mm256_storeu_ps(dst + 8, _mm256_cvtph_ps(_mm256_extracti128_si256(halves, 1)));
}
TENSORFS_TARGET inline void store16_f16_times(__m256i halves, Floats factor, float* dst) {
    _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(halves)), factor));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(halves, 1)), factor));
}

// dst[i] = the bfloat16 value whose bits are 16-bit lane i of `halves` (its bits moved up by 16).
TENSORFS_TARGET inline void store16_bf16(__m256i halves, float* dst) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(halves)), 16));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 8),
                        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(halves, 1)), 16));
}
