// The safetensors 8-bit and sub-byte floats (definitions in small_floats.cpp), 16 values per step. Each code's
// sign, exponent and mantissa fields are moved into an IEEE half (or, for E8M0, a bfloat16) whose hardware
// conversion is exact: for the formats with a smaller exponent bias the half is the value times a power of two,
// which one exact product undoes (2^(15 - bias): the half's subnormals cover the format's). NaN codes become the
// half 0x7E00 with the code's sign, which converts to sign | 0x7fc00000 like the portable tables.

namespace small_floats {

TENSORFS_TARGET inline __m256i splat16(int value) { return _mm256_set1_epi16(static_cast<short>(value)); }

// Lanes where `nan` is all ones take sign | 0x7E00 (a quiet half NaN), the others keep `halves`.
TENSORFS_TARGET inline __m256i with_nans(__m256i halves, __m256i sign, __m256i nan) {
    return _mm256_blendv_epi8(halves, _mm256_or_si256(sign, splat16(0x7E00)), nan);
}

// 16 one-byte codes, one per 16-bit lane, and their sign bits moved to bit 15.
TENSORFS_TARGET inline __m256i byte_codes(const std::uint8_t* src) { return _mm256_cvtepu8_epi16(load16(src)); }
TENSORFS_TARGET inline __m256i sign_of_byte(__m256i codes) {
    return _mm256_and_si256(_mm256_slli_epi16(codes, 8), splat16(0x8000));
}

// E4M3 "fn" (bias 7): half = code's 7 low bits << 7 is the value times 2^-8; S.1111.111 is NaN.
TENSORFS_TARGET inline void e4m3_step(const std::uint8_t* src, float* dst) {
    const __m256i codes = byte_codes(src);
    const __m256i magnitude = _mm256_and_si256(codes, splat16(0x7F));
    const __m256i sign = sign_of_byte(codes);
    const __m256i halves = _mm256_or_si256(sign, _mm256_slli_epi16(magnitude, 7));
    store16_f16_times(with_nans(halves, sign, _mm256_cmpeq_epi16(magnitude, splat16(0x7F))), broadcast(256.0f), dst);
}

// E5M2 (bias 15): the code is the high byte of a half; exponent 31 with a mantissa is NaN (0 is infinity).
TENSORFS_TARGET inline void e5m2_step(const std::uint8_t* src, float* dst) {
    const __m256i codes = byte_codes(src);
    const __m256i nan = _mm256_cmpgt_epi16(_mm256_and_si256(codes, splat16(0x7F)), splat16(0x7C));
    store16_f16(with_nans(_mm256_slli_epi16(codes, 8), sign_of_byte(codes), nan), dst);
}

// E4M3FNUZ (bias 8): as E4M3, times 2^7 instead of 2^8; 0x80 is the only NaN.
TENSORFS_TARGET inline void e4m3fnuz_step(const std::uint8_t* src, float* dst) {
    const __m256i codes = byte_codes(src);
    const __m256i sign = sign_of_byte(codes);
    const __m256i halves = _mm256_or_si256(sign, _mm256_slli_epi16(_mm256_and_si256(codes, splat16(0x7F)), 7));
    store16_f16_times(with_nans(halves, sign, _mm256_cmpeq_epi16(codes, splat16(0x80))), broadcast(128.0f), dst);
}

// E5M2FNUZ (bias 16): a code of exponent e >= 2 is the high byte of a half with its exponent lowered by one (so
// exponent 31 is finite). Exponents 0 and 1 give half subnormals: mantissa field (e << 9) | (m << 7), which is the
// code's low 3 bits << 7. 0x80 is the only NaN.
TENSORFS_TARGET inline void e5m2fnuz_step(const std::uint8_t* src, float* dst) {
    const __m256i codes = byte_codes(src);
    const __m256i sign = sign_of_byte(codes);
    const __m256i magnitude = _mm256_and_si256(codes, splat16(0x7F));
    const __m256i normal = _mm256_sub_epi16(_mm256_slli_epi16(magnitude, 8), splat16(0x400));
    const __m256i subnormal = _mm256_slli_epi16(_mm256_and_si256(codes, splat16(7)), 7);
    const __m256i exponent_0_or_1 = _mm256_cmpeq_epi16(_mm256_and_si256(codes, splat16(0x78)), _mm256_setzero_si256());
    const __m256i halves = _mm256_or_si256(sign, _mm256_blendv_epi8(normal, subnormal, exponent_0_or_1));
    store16_f16(with_nans(halves, sign, _mm256_cmpeq_epi16(codes, splat16(0x80))), dst);
}

// E8M0 (2^(e - 127)) as a bfloat16: e << 7; e = 0 is the float32 subnormal 2^-127, e = 255 NaN.
TENSORFS_TARGET inline void e8m0_step(const std::uint8_t* src, float* dst) {
    const __m256i codes = byte_codes(src);
    __m256i bf16 = _mm256_slli_epi16(codes, 7);
    bf16 = _mm256_blendv_epi8(bf16, splat16(0x0040), _mm256_cmpeq_epi16(codes, _mm256_setzero_si256()));
    bf16 = _mm256_blendv_epi8(bf16, splat16(0x7FC0), _mm256_cmpeq_epi16(codes, splat16(0xFF)));
    store16_bf16(bf16, dst);
}

// F4 E2M1 (bias 1), two codes per byte, the first in the low nibble: half = sign << 15 | rest << 9, times 2^14.
TENSORFS_TARGET inline void e2m1_step(const std::uint8_t* src, float* dst) {
    const __m128i packed = load8(src);
    const __m256i codes = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(low_nibbles(packed), high_nibbles(packed)));
    const __m256i halves = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(codes, splat16(8)), 12),
                                           _mm256_slli_epi16(_mm256_and_si256(codes, splat16(7)), 9));
    store16_f16_times(halves, broadcast(16384.0f), dst);
}

// F6: four 6-bit codes in three bytes, code k in bits 6k..6k+5 of the little-endian 24-bit group. Each 16-bit lane
// gets the two bytes holding its code (group bytes 0-1 for codes 0 and 1, 1-2 for codes 2 and 3), a multiply moves
// the code to bits 10..15 (shifts of 10, 4, 6, 0: AVX2 has no per-lane 16-bit shift) and a shift brings it down.
TENSORFS_TARGET inline __m256i six_bit_codes(const std::uint8_t* src) {
    const __m256i bytes = _mm256_broadcastsi128_si256(load16(src));
    const __m256i pairs = _mm256_setr_epi8(0, 1, 0, 1, 1, 2, 1, 2, 3, 4, 3, 4, 4, 5, 4, 5,   // groups 0 and 1
                                           6, 7, 6, 7, 7, 8, 7, 8, 9, 10, 9, 10, 10, 11, 10, 11);  // groups 2, 3
    const __m256i to_top = _mm256_setr_epi16(1024, 16, 64, 1, 1024, 16, 64, 1, 1024, 16, 64, 1, 1024, 16, 64, 1);
    return _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(bytes, pairs), to_top), 10);
}

// F6 E2M3 (bias 1): half = sign << 15 | rest << 7, times 2^14. F6 E3M2 (bias 3): rest << 8, times 2^12.
TENSORFS_TARGET inline void e2m3_step(const std::uint8_t* src, float* dst) {
    const __m256i codes = six_bit_codes(src);
    const __m256i halves = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(codes, splat16(0x20)), 10),
                                           _mm256_slli_epi16(_mm256_and_si256(codes, splat16(0x1F)), 7));
    store16_f16_times(halves, broadcast(16384.0f), dst);
}
TENSORFS_TARGET inline void e3m2_step(const std::uint8_t* src, float* dst) {
    const __m256i codes = six_bit_codes(src);
    const __m256i halves = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(codes, splat16(0x20)), 10),
                                           _mm256_slli_epi16(_mm256_and_si256(codes, splat16(0x1F)), 8));
    store16_f16_times(halves, broadcast(4096.0f), dst);
}

}  // namespace small_floats

TENSORFS_TARGET void f8_e4m3(const std::uint8_t* src, std::size_t n, float* dst) {
    in_steps<16, 16, 16, small_floats::e4m3_step>(src, n, dst);
}
TENSORFS_TARGET void f8_e5m2(const std::uint8_t* src, std::size_t n, float* dst) {
    in_steps<16, 16, 16, small_floats::e5m2_step>(src, n, dst);
}
TENSORFS_TARGET void f8_e4m3fnuz(const std::uint8_t* src, std::size_t n, float* dst) {
    in_steps<16, 16, 16, small_floats::e4m3fnuz_step>(src, n, dst);
}
TENSORFS_TARGET void f8_e5m2fnuz(const std::uint8_t* src, std::size_t n, float* dst) {
    in_steps<16, 16, 16, small_floats::e5m2fnuz_step>(src, n, dst);
}
TENSORFS_TARGET void f8_e8m0(const std::uint8_t* src, std::size_t n, float* dst) {
    in_steps<16, 16, 16, small_floats::e8m0_step>(src, n, dst);
}
TENSORFS_TARGET void f4_e2m1(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    in_steps<8, 8, 16, small_floats::e2m1_step>(src, nblocks, dst);
}
TENSORFS_TARGET void f6_e2m3(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    in_steps<12, 16, 16, small_floats::e2m3_step>(src, 3 * nblocks, dst);
}
TENSORFS_TARGET void f6_e3m2(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    in_steps<12, 16, 16, small_floats::e3m2_step>(src, 3 * nblocks, dst);
}
