// ggml's 256-element super-block quants Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (layouts in k_quant_layout.hpp). The
// sub-block factors (d * scale, dmin * min) are computed once per sub-block with the roundings of k_quants.cpp;
// the per-element float(q) * factor [- min] runs over 16 or 32 outputs at a time, in the same order.

namespace kquant {

// Q2_K's 16 sub-block scales (low nibbles) and mins (high nibbles), each times d or dmin.
struct Q2kFactors {
    alignas(32) float scale[16];
    alignas(32) float min[16];
};

TENSORFS_TARGET inline void times_8(__m128i bytes, float factor, float* out) {
    _mm256_store_ps(out, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)), _mm256_set1_ps(factor)));
}

TENSORFS_TARGET inline void q2k_factors(const std::uint8_t* scales, float d, float dmin, Q2kFactors& f) {
    const __m128i packed = load16(scales);
    const __m128i low = low_nibbles(packed), high = high_nibbles(packed);
    times_8(low, d, f.scale);
    times_8(_mm_srli_si128(low, 8), d, f.scale + 8);
    times_8(high, dmin, f.min);
    times_8(_mm_srli_si128(high, 8), dmin, f.min + 8);
}

// Sub-block j (0..7) of Q4_K / Q5_K from the 12 packed scale bytes: 0..3 use the low 6 bits of bytes j and j + 4;
// 4..7 take 4 bits from byte j + 4 and their top 2 bits from the spare high bits of bytes j - 4 (scale) and j (min).
struct SubBlock {
    Floats scale;
    Floats min;
};

TENSORFS_TARGET inline SubBlock sub_block_k4(std::size_t j, const std::uint8_t* s, float d, float dmin) {
    int scale, min;
    if (j < 4) {
        scale = s[j] & 63;
        min = s[j + 4] & 63;
    } else {
        scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
    return {broadcast(d * static_cast<float>(scale)), broadcast(dmin * static_cast<float>(min))};
}

// Q3_K's 16 signed scales: 16 low nibbles (bytes 0..7, low then high nibbles) and 16 2-bit high parts (bytes
// 8..11, bit pair j / 4 of byte 8 + j % 4), minus 32; each times d.
TENSORFS_TARGET inline void q3k_factors(const std::uint8_t* s, float d, float* factors) {
    for (std::size_t j = 0; j < 16; ++j) {
        const int low = j < 8 ? (s[j] & 0x0F) : (s[j - 8] >> 4);
        const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        factors[j] = d * static_cast<float>((low | (high << 4)) - 32);
    }
}

}  // namespace kquant

// Q2_K: per 128-element half, 32 bytes of qs read four times (bit pairs 0, 2, 4, 6); each pass is two sub-blocks
// of 16 (bytes 0..15, then 16..31), value (d * scale) * q - dmin * min.
TENSORFS_TARGET void q2_k(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    kquant::Q2kFactors f;
    for (std::size_t b = 0; b < nblocks; ++b, src += q2k::bytes) {
        kquant::q2k_factors(src + q2k::scales, load_f16(src + q2k::d), load_f16(src + q2k::dmin), f);
        std::size_t sub = 0;
        for (std::size_t half = 0; half < 2; ++half) {
            const __m256i packed = load32(src + q2k::qs + 32 * half);
            for (int shift = 0; shift < 8; shift += 2, sub += 2, dst += 32) {
                const __m256i q = bit_pairs(packed, shift);
                store16_minus(low_half(q), broadcast(f.scale[sub]), broadcast(f.min[sub]), dst);
                store16_minus(high_half(q), broadcast(f.scale[sub + 1]), broadcast(f.min[sub + 1]), dst + 16);
            }
        }
    }
}

// Q3_K: Q2_K's walk with a third bit from hmask (bit clear: subtract 4; half h, pass p uses bit 4h + p) and signed
// scales, value (d * scale) * q.
TENSORFS_TARGET void q3_k(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    alignas(32) float factors[16];
    const __m256i four = _mm256_set1_epi8(4);
    for (std::size_t b = 0; b < nblocks; ++b, src += q3k::bytes) {
        kquant::q3k_factors(src + q3k::scales, load_f16(src + q3k::d), factors);
        const __m256i hmask = load32(src + q3k::hmask);
        std::size_t sub = 0;
        for (std::size_t half = 0; half < 2; ++half) {
            const __m256i packed = load32(src + q3k::qs + 32 * half);
            for (int shift = 0; shift < 8; shift += 2, sub += 2, dst += 32) {
                const __m256i bit = _mm256_set1_epi8(static_cast<char>(1u << (4 * half + shift / 2)));
                const __m256i clear = _mm256_cmpeq_epi8(_mm256_and_si256(hmask, bit), _mm256_setzero_si256());
                const __m256i q = _mm256_sub_epi8(bit_pairs(packed, shift), _mm256_and_si256(clear, four));
                store16(low_half(q), broadcast(factors[sub]), dst);
                store16(high_half(q), broadcast(factors[sub + 1]), dst + 16);
            }
        }
    }
}

// Q4_K: 4 chunks of 32 bytes; low nibbles are sub-block 2c (64c + 0..31), high nibbles sub-block 2c + 1.
TENSORFS_TARGET void q4_k(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += q4k::bytes) {
        const float d = load_f16(src + q4k::d);
        const float dmin = load_f16(src + q4k::dmin);
        for (std::size_t chunk = 0; chunk < 4; ++chunk, dst += 64) {
            const kquant::SubBlock lo = kquant::sub_block_k4(2 * chunk, src + q4k::scales, d, dmin);
            const kquant::SubBlock hi = kquant::sub_block_k4(2 * chunk + 1, src + q4k::scales, d, dmin);
            const __m256i packed = load32(src + q4k::qs + 32 * chunk);
            store32_minus(low_nibbles(packed), lo.scale, lo.min, dst);
            store32_minus(high_nibbles(packed), hi.scale, hi.min, dst + 32);
        }
    }
}

// Q5_K: Q4_K plus a fifth bit (value 16): chunk c takes bit 2c of qh[l] for its low nibbles, 2c + 1 for its high.
TENSORFS_TARGET void q5_k(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m256i sixteen = _mm256_set1_epi8(16);
    for (std::size_t b = 0; b < nblocks; ++b, src += q5k::bytes) {
        const float d = load_f16(src + q5k::d);
        const float dmin = load_f16(src + q5k::dmin);
        const __m256i qh = load32(src + q5k::qh);
        for (std::size_t chunk = 0; chunk < 4; ++chunk, dst += 64) {
            const kquant::SubBlock lo = kquant::sub_block_k4(2 * chunk, src + q5k::scales, d, dmin);
            const kquant::SubBlock hi = kquant::sub_block_k4(2 * chunk + 1, src + q5k::scales, d, dmin);
            const __m256i lo_bit = _mm256_set1_epi8(static_cast<char>(1u << (2 * chunk)));
            const __m256i hi_bit = _mm256_set1_epi8(static_cast<char>(2u << (2 * chunk)));
            // 16 where the bit is set, else 0.
            const __m256i lo_16 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, lo_bit), lo_bit), sixteen);
            const __m256i hi_16 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, hi_bit), hi_bit), sixteen);
            const __m256i packed = load32(src + q5k::qs + 32 * chunk);
            store32_minus(_mm256_or_si256(low_nibbles(packed), lo_16), lo.scale, lo.min, dst);
            store32_minus(_mm256_or_si256(high_nibbles(packed), hi_16), hi.scale, hi.min, dst + 32);
        }
    }
}

// Q6_K: per 128-element half, 64 bytes of ql and 32 of qh: element l + 32k (k = 0..3) is a nibble of ql (k = 0: low
// of ql[l], 1: low of ql[l + 32], 2: high of ql[l], 3: high of ql[l + 32]) plus bit pair k of qh[l] as bits 4..5,
// minus 32. Elements l < 16 and l >= 16 of each run of 32 have their own signed scale; the factor is d * scale.
TENSORFS_TARGET void q6_k(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const __m256i bits_45 = _mm256_set1_epi8(0x30);
    const __m256i thirty_two = _mm256_set1_epi8(32);
    for (std::size_t b = 0; b < nblocks; ++b, src += q6k::bytes) {
        const float d = load_f16(src + q6k::d);
        const std::uint8_t* sc = src + q6k::scales;
        for (std::size_t half = 0; half < 2; ++half, sc += 8, dst += 128) {
            const __m256i ql_a = load32(src + q6k::ql + 64 * half);
            const __m256i ql_b = load32(src + q6k::ql + 64 * half + 32);
            const __m256i qh = load32(src + q6k::qh + 32 * half);
            // Bit pair k of qh moved to bits 4..5 of each byte (16-bit shifts: the mask drops what crosses bytes).
            const __m256i high[4] = {_mm256_and_si256(_mm256_slli_epi16(qh, 4), bits_45),
                                     _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits_45), _mm256_and_si256(qh, bits_45),
                                     _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits_45)};
            const __m256i low[4] = {low_nibbles(ql_a), low_nibbles(ql_b), high_nibbles(ql_a), high_nibbles(ql_b)};
            for (std::size_t k = 0; k < 4; ++k) {
                const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low[k], high[k]), thirty_two);
                const float first = d * static_cast<float>(static_cast<std::int8_t>(sc[2 * k]));
                const float second = d * static_cast<float>(static_cast<std::int8_t>(sc[2 * k + 1]));
                store16(low_half(q), broadcast(first), dst + 32 * k);
                store16(high_half(q), broadcast(second), dst + 32 * k + 16);
            }
        }
    }
}
