// ggml's ternary types TQ1_0 and TQ2_0 and its 1- and 2-bit types Q1_0 and Q2_0 (layouts in ternary_quants.cpp and
// low_bit_quants.cpp). Values are float(t - 1) * d for a trit or 2-bit field t, or +-d for a Q1_0 bit.

namespace low_bit {

// Trit n of every byte of a TQ1_0 run: the byte stores its trits as a base-3 fraction scaled to 0..255, so
// multiplying by 3^n (wrapping at 256) drops the first n trits and the next one is then (x * 3) >> 8. There is no
// byte multiply: each 16-bit lane multiplies one byte placed in its high half (the product wraps at 2^16, which
// keeps x * 3^n mod 256 there), and the high half of that times 3 is the trit. `powers` holds 3^n per 16-bit lane.
TENSORFS_TARGET inline __m256i trits(__m256i bytes, __m256i powers) {
    const __m256i three = _mm256_set1_epi16(3);
    const __m256i even = _mm256_mullo_epi16(_mm256_slli_epi16(bytes, 8), powers);
    const __m256i high_bytes = _mm256_set1_epi16(static_cast<short>(0xFF00));
    const __m256i odd = _mm256_mullo_epi16(_mm256_and_si256(bytes, high_bytes), powers);
    return _mm256_or_si256(_mm256_mulhi_epu16(even, three), _mm256_slli_epi16(_mm256_mulhi_epu16(odd, three), 8));
}

TENSORFS_TARGET inline __m256i minus_one(__m256i fields) { return _mm256_sub_epi8(fields, _mm256_set1_epi8(1)); }

constexpr short kPow3[5] = {1, 3, 9, 27, 81};

}  // namespace low_bit

// TQ1_0, 54 bytes: 48 bytes of 5 trits each, 4 bytes of 4 trits each, f16 d. Element order: trit-major over qs
// bytes 0..31 (160 elements), then over qs bytes 32..47 (80), then over the 4 qh bytes (16).
TENSORFS_TARGET void tq1_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    using low_bit::kPow3;
    // The qh run: 16-bit lanes 2n and 2n + 1 of the low 128 bits hold 4 bytes that give trit n.
    const __m256i qh_powers = _mm256_setr_epi16(kPow3[0], kPow3[0], kPow3[1], kPow3[1], kPow3[2], kPow3[2], kPow3[3],
                                                kPow3[3], 0, 0, 0, 0, 0, 0, 0, 0);
    for (std::size_t b = 0; b < nblocks; ++b, src += 54) {
        const Floats d = broadcast(load_f16(src + 52));
        const __m256i first = load32(src);
        for (std::size_t n = 0; n < 5; ++n, dst += 32) {
            store32(low_bit::minus_one(low_bit::trits(first, _mm256_set1_epi16(kPow3[n]))), d, dst);
        }
        // The 16 bytes of the second run in both 128-bit lanes: trit n in the low lane, n + 1 in the high one.
        const __m256i second = _mm256_broadcastsi128_si256(load16(src + 32));
        for (std::size_t n = 0; n < 4; n += 2, dst += 32) {
            const __m256i powers = _mm256_setr_m128i(_mm_set1_epi16(kPow3[n]), _mm_set1_epi16(kPow3[n + 1]));
            store32(low_bit::minus_one(low_bit::trits(second, powers)), d, dst);
        }
        store16(low_half(low_bit::minus_one(low_bit::trits(second, _mm256_set1_epi16(kPow3[4])))), d, dst);
        dst += 16;
        const __m256i qh = _mm256_set1_epi32(static_cast<int>(load_u32(src + 48)));
        store16(low_half(low_bit::minus_one(low_bit::trits(qh, qh_powers))), d, dst);
        dst += 16;
    }
}

// TQ2_0, 66 bytes: 64 bytes of four 2-bit fields each, f16 d. For each run of 32 bytes: bit pair 0 of all 32 bytes,
// then pairs 1, 2, 3. A field of 3 gives 2 * d, as in ggml.
TENSORFS_TARGET void tq2_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += 66) {
        const Floats d = broadcast(load_f16(src + 64));
        for (std::size_t run = 0; run < 64; run += 32) {
            const __m256i packed = load32(src + run);
            for (int shift = 0; shift < 8; shift += 2, dst += 32) {
                store32(low_bit::minus_one(bit_pairs(packed, shift)), d, dst);
            }
        }
    }
}

// Q1_0, 18 bytes: f16 d | 16 bytes of bits, element j at bit j % 8 of byte j / 8; a set bit is d, a clear one -d.
TENSORFS_TARGET void q1_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += 18) {
        const Floats d = broadcast(load_f16(src));
        for (std::size_t i = 0; i < 8; ++i, dst += 16) {
            store16_value_negated(d, ~load_u16(src + 2 + 2 * i) & 0xFFFFu, dst);
        }
    }
}

// Q2_0, 18 bytes: f16 d | 16 bytes of 2-bit fields, element j at bits 2 (j % 4) of byte j / 4; value (q - 1) * d.
// Each bit pair of all 16 bytes is extracted at once, then interleaved back into element order.
TENSORFS_TARGET void q2_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m128i three = _mm_set1_epi8(3), one = _mm_set1_epi8(1);
    for (std::size_t b = 0; b < nblocks; ++b, src += 18, dst += 64) {
        const Floats d = broadcast(load_f16(src));
        const __m128i packed = load16(src + 2);
        __m128i field[4];
        for (int k = 0; k < 4; ++k) field[k] = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 2 * k), three), one);
        const __m128i pairs01_low = _mm_unpacklo_epi8(field[0], field[1]);
        const __m128i pairs01_high = _mm_unpackhi_epi8(field[0], field[1]);
        const __m128i pairs23_low = _mm_unpacklo_epi8(field[2], field[3]);
        const __m128i pairs23_high = _mm_unpackhi_epi8(field[2], field[3]);
        store16(_mm_unpacklo_epi16(pairs01_low, pairs23_low), d, dst);
        store16(_mm_unpackhi_epi16(pairs01_low, pairs23_low), d, dst + 16);
        store16(_mm_unpacklo_epi16(pairs01_high, pairs23_high), d, dst + 32);
        store16(_mm_unpackhi_epi16(pairs01_high, pairs23_high), d, dst + 48);
    }
}
