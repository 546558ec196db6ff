// The 16-level lookup formats IQ4_XS (ggml's non-linear levels kvalues_iq4nl), MXFP4 and NVFP4 (E2M1 levels
// kvalues_fp4 with an E8M0 / UE4M3 scale, fp4_scales.hpp). A byte shuffle looks up 16 or 32 nibbles at once; each
// level then becomes float(level) * scale, the single product of i_quants.cpp and fp4_quants.cpp. (IQ4_NL, laid out
// like Q4_0, is in fast_legacy.inl.)

namespace nibble_tables {

// The 16 signed levels of a table in both 128-bit lanes, for the 256-bit shuffle.
TENSORFS_TARGET inline __m256i levels_in_both_lanes(const std::array<std::int8_t, 16>& levels) {
    return _mm256_broadcastsi128_si256(load16(reinterpret_cast<const std::uint8_t*>(levels.data())));
}

// d * (s - 32) for the 6-bit scale s of IQ4_XS group g: its low nibble from scales_l, its top 2 bits from scales_h.
inline float iq4xs_group_scale(const std::uint8_t* block, unsigned scales_high, float d, std::size_t g) {
    const unsigned low = (block[4 + g / 2] >> (4 * (g % 2))) & 0xFu;
    const unsigned high = (scales_high >> (2 * g)) & 3u;
    return d * static_cast<float>(static_cast<int>(low | (high << 4)) - 32);
}

}  // namespace nibble_tables

// IQ4_XS, 136 bytes per 256: f16 d | u16 scales_h (2 high bits per group) | 4 scales_l bytes (a low nibble per
// group) | 8 groups of 16 bytes: low nibbles are elements 0..15 of the group, high nibbles 16..31. Two groups per
// 32-byte load: the shuffle works per 128-bit lane, so lane 0 holds group 2p and lane 1 group 2p + 1.
TENSORFS_TARGET void iq4_xs(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m256i levels = nibble_tables::levels_in_both_lanes(ggml_tables::kvalues_iq4nl);
    for (std::size_t b = 0; b < nblocks; ++b, src += 136) {
        const float d = load_f16(src);
        const unsigned scales_high = load_u16(src + 2);
        for (std::size_t g = 0; g < 8; g += 2, dst += 64) {
            const __m256i packed = load32(src + 8 + 16 * g);
            const __m256i first = _mm256_shuffle_epi8(levels, low_nibbles(packed));
            const __m256i second = _mm256_shuffle_epi8(levels, high_nibbles(packed));
            const Floats scale_a = broadcast(nibble_tables::iq4xs_group_scale(src, scales_high, d, g));
            const Floats scale_b = broadcast(nibble_tables::iq4xs_group_scale(src, scales_high, d, g + 1));
            store16(low_half(first), scale_a, dst);
            store16(low_half(second), scale_a, dst + 16);
            store16(high_half(first), scale_b, dst + 32);
            store16(high_half(second), scale_b, dst + 48);
        }
    }
}

// MXFP4, 17 bytes per 32 elements: E8M0 scale byte | 16 bytes of nibbles (low: elements 0..15, high: 16..31).
TENSORFS_TARGET void mxfp4(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m256i levels = nibble_tables::levels_in_both_lanes(ggml_tables::kvalues_fp4);
    for (std::size_t b = 0; b < nblocks; ++b, src += 17, dst += 32) {
        const __m128i packed = load16(src + 1);
        const __m256i q = _mm256_shuffle_epi8(levels, _mm256_set_m128i(high_nibbles(packed), low_nibbles(packed)));
        store32(q, broadcast(e8m0_half(src[0])), dst);
    }
}

// NVFP4, 36 bytes per 64 elements: 4 UE4M3 scale bytes, one per 16-element sub-block | 4 x 8 bytes of nibbles, sub-
// block s in bytes 8s..8s+7 (low nibbles: its elements 0..7, high: 8..15). Two sub-blocks per 16-byte load.
TENSORFS_TARGET void nvfp4(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m256i levels = nibble_tables::levels_in_both_lanes(ggml_tables::kvalues_fp4);
    for (std::size_t b = 0; b < nblocks; ++b, src += 36) {
        for (std::size_t s = 0; s < 4; s += 2, dst += 32) {
            const __m128i packed = load16(src + 4 + 8 * s);
            // Lane 0: sub-block s (its low nibbles, then its high ones); lane 1: sub-block s + 1.
            const __m128i lows = low_nibbles(packed), highs = high_nibbles(packed);
            const __m256i codes = _mm256_set_m128i(_mm_unpackhi_epi64(lows, highs), _mm_unpacklo_epi64(lows, highs));
            const __m256i q = _mm256_shuffle_epi8(levels, codes);
            store16(low_half(q), broadcast(kUe4m3Halves[src[s]]), dst);
            store16(high_half(q), broadcast(kUe4m3Halves[src[s + 1]]), dst + 16);
        }
    }
}
