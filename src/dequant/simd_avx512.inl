// The AVX-512 path's way of turning small integers and 16-bit floats into float32 outputs: 16 lanes per register,
// so 16 outputs are one conversion, one product and one store, and a sign flip is one masked XOR. fast_avx512.cpp
// includes this inside namespace tensorfs::kernels::avx512; the functions and their contracts are those of
// simd_avx2.inl (see there, bit-exactness included).

using Floats = __m512;

TENSORFS_TARGET inline Floats broadcast(float value) { return _mm512_set1_ps(value); }

namespace simd {

TENSORFS_TARGET inline __m512 floats16(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)); }

TENSORFS_TARGET inline __m512 negate_where(__m512 values, unsigned bits16) {
    const __m512i bits = _mm512_castps_si512(values);
    return _mm512_castsi512_ps(_mm512_mask_xor_epi32(bits, static_cast<__mmask16>(bits16), bits,
                                                     _mm512_set1_epi32(static_cast<int>(0x80000000u))));
}

}  // namespace simd

TENSORFS_TARGET inline void store16(__m128i q, Floats scale, float* dst) {
    _mm512_storeu_ps(dst, _mm512_mul_ps(simd::floats16(q), scale));
}

TENSORFS_TARGET inline void store16_minus(__m128i q, Floats scale, Floats min, float* dst) {
    _mm512_storeu_ps(dst, _mm512_sub_ps(_mm512_mul_ps(simd::floats16(q), scale), min));
}

TENSORFS_TARGET inline void store16_plus(__m128i q, Floats scale, Floats offset, float* dst) {
    _mm512_storeu_ps(dst, _mm512_add_ps(_mm512_mul_ps(simd::floats16(q), scale), offset));
}

TENSORFS_TARGET inline void store16_negated(__m128i q, Floats scale, unsigned negate, float* dst) {
    _mm512_storeu_ps(dst, simd::negate_where(_mm512_mul_ps(simd::floats16(q), scale), negate));
}

TENSORFS_TARGET inline void store16_value_negated(Floats value, unsigned negate, float* dst) {
    _mm512_storeu_ps(dst, simd::negate_where(value, negate));
}

TENSORFS_TARGET inline void store16_f16(__m256i halves, float* dst) { _mm512_storeu_ps(dst, _mm512_cvtph_ps(halves)); }
TENSORFS_TARGET inline void store16_f16_times(__m256i halves, Floats factor, float* dst) {
    _mm512_storeu_ps(dst, _mm512_mul_ps(_mm512_cvtph_ps(halves), factor));
}

TENSORFS_TARGET inline void store16_bf16(__m256i halves, float* dst) {
    _mm512_storeu_si512(dst, _mm512_slli_epi32(_mm512_cvtepu16_epi32(halves), 16));
}
