// ggml's 32-element block quants Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and IQ4_NL: an f16 scale d (Q4_1, Q5_1: then an f16
// offset m); byte j of the nibbles holds element j in its low half and element j + 16 in its high half. Values are
// float(q) * d (+ m), the products and sums of legacy_quants.cpp and i_quants.cpp.

namespace legacy {

// The 32 fifth bits of Q5_0 / Q5_1 (bit i: element i) as 32 bytes, 16 where the bit is set, else 0.
TENSORFS_TARGET inline __m256i fifth_bits(std::uint32_t qh) {
    // Byte i takes byte i / 8 of qh, then keeps bit i % 8.
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                                               _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202,
                                                                  0x0303030303030303));
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_and_si256(set, _mm256_set1_epi8(16));
}

// The 32 elements of a block as bytes (0..31 for 5-bit quants): low nibbles first, then high nibbles.
TENSORFS_TARGET inline __m256i nibbles_in_order(const std::uint8_t* qs) {
    const __m128i packed = load16(qs);
    return _mm256_set_m128i(high_nibbles(packed), low_nibbles(packed));
}

}  // namespace legacy

TENSORFS_TARGET void q8_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += 34, dst += 32) {
        store32(load32(src + 2), broadcast(load_f16(src)), dst);
    }
}

TENSORFS_TARGET void q4_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += 18, dst += 32) {
        const __m256i q = _mm256_sub_epi8(legacy::nibbles_in_order(src + 2), _mm256_set1_epi8(8));
        store32(q, broadcast(load_f16(src)), dst);
    }
}

TENSORFS_TARGET void q4_1(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += 20, dst += 32) {
        const __m256i q = legacy::nibbles_in_order(src + 4);
        const Floats d = broadcast(load_f16(src));
        const Floats m = broadcast(load_f16(src + 2));
        store16_plus(low_half(q), d, m, dst);
        store16_plus(high_half(q), d, m, dst + 16);
    }
}

TENSORFS_TARGET void q5_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += 22, dst += 32) {
        const __m256i q = _mm256_or_si256(legacy::nibbles_in_order(src + 6), legacy::fifth_bits(load_u32(src + 2)));
        store32(_mm256_sub_epi8(q, _mm256_set1_epi8(16)), broadcast(load_f16(src)), dst);
    }
}

TENSORFS_TARGET void q5_1(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += 24, dst += 32) {
        const __m256i q = _mm256_or_si256(legacy::nibbles_in_order(src + 8), legacy::fifth_bits(load_u32(src + 4)));
        const Floats d = broadcast(load_f16(src));
        const Floats m = broadcast(load_f16(src + 2));
        store16_plus(low_half(q), d, m, dst);
        store16_plus(high_half(q), d, m, dst + 16);
    }
}

TENSORFS_TARGET void iq4_nl(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m256i levels = _mm256_broadcastsi128_si256(load16(reinterpret_cast<const std::uint8_t*>(
        ggml_tables::kvalues_iq4nl.data())));
    for (std::size_t b = 0; b < nblocks; ++b, src += 18, dst += 32) {
        store32(_mm256_shuffle_epi8(levels, legacy::nibbles_in_order(src + 2)), broadcast(load_f16(src)), dst);
    }
}
