// ggml's grid formats IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M (layouts in i_quants.cpp). A group
// of 32 elements is 4 grid entries of 8 magnitudes (or 8 entries of 4): their bytes are loaded straight from the
// tables into one register, converted to floats and scaled by the group scale (iq_scales.hpp) in one product,
// then the signs flip what they negate, as i_quants.cpp computes it. IQ1 adds its +-1/8 offset in the integers: see
// iq1_values.

namespace grids {

namespace t = ggml_tables;

TENSORFS_TARGET inline __m256i four_entries(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
    return _mm256_setr_epi64x(static_cast<long long>(a), static_cast<long long>(b), static_cast<long long>(c),
                              static_cast<long long>(d));
}

// The 8 sign bytes of four 7-bit sign fields (bits 0..27 of `fields`), expanded through ksigns_iq2xs.
inline std::uint32_t expanded_signs(std::uint32_t fields) {
    std::uint32_t signs = 0;
    for (unsigned l = 0; l < 4; ++l) signs |= std::uint32_t{t::ksigns_iq2xs[(fields >> (7 * l)) & 127u]} << (8 * l);
    return signs;
}

// IQ1 values: scale * (g + delta) with g in {-1, 0, 1} and delta = +-1/8 is (scale / 8) * (8g +- 1) exactly: the
// two real products are equal, so they round to the same float, and scale / 8 is exact (|scale| >= 2^-24 or 0, an
// f16 times a small odd integer). This returns the bytes 8g + 1 where `minus` has 0 and 8g - 1 where it has 0xFF.
TENSORFS_TARGET inline __m256i iq1_values(__m256i entries, __m256i minus) {
    const __m256i eight_g = _mm256_and_si256(_mm256_slli_epi16(entries, 3), _mm256_set1_epi8(static_cast<char>(0xF8)));
    return _mm256_add_epi8(eight_g, _mm256_or_si256(minus, _mm256_set1_epi8(1)));
}

}  // namespace grids

// IQ2_XXS, 66 bytes: f16 d | 8 groups x 8 bytes: 4 grid indices, then a u32 of four 7-bit sign fields and the
// 4-bit group scale.
TENSORFS_TARGET void iq2_xxs(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const auto& grid = grids::t::iq2xxs_grid;
    for (std::size_t b = 0; b < nblocks; ++b, src += 66) {
        const float d = load_f16(src);
        for (const std::uint8_t* group = src + 2; group < src + 66; group += 8, dst += 32) {
            const std::uint32_t signs_and_scale = load_u32(group + 4);
            const __m256i q = grids::four_entries(grid[group[0]], grid[group[1]], grid[group[2]], grid[group[3]]);
            store32_negated(q, broadcast(half_step_scale(d, signs_and_scale >> 28, 0.25f)),
                            grids::expanded_signs(signs_and_scale), dst);
        }
    }
}

// IQ2_XS, 74 bytes: f16 d | 32 u16 codes (9-bit grid index, 7-bit sign field) | 8 scale bytes (low nibble: the
// group's first 16 elements, high nibble: the last 16).
TENSORFS_TARGET void iq2_xs(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const auto& grid = grids::t::iq2xs_grid;
    const auto& signs = grids::t::ksigns_iq2xs;
    for (std::size_t b = 0; b < nblocks; ++b, src += 74) {
        const float d = load_f16(src);
        for (std::size_t g = 0; g < 8; ++g, dst += 32) {
            unsigned code[4];
            for (unsigned l = 0; l < 4; ++l) code[l] = load_u16(src + 2 + 8 * g + 2 * l);
            const __m256i q = grids::four_entries(grid[code[0] & 511u], grid[code[1] & 511u], grid[code[2] & 511u],
                                                  grid[code[3] & 511u]);
            const unsigned scales = src[66 + g];
            store16_negated(low_half(q), broadcast(half_step_scale(d, scales & 0xFu, 0.25f)),
                            signs[code[0] >> 9] | signs[code[1] >> 9] << 8, dst);
            store16_negated(high_half(q), broadcast(half_step_scale(d, scales >> 4, 0.25f)),
                            signs[code[2] >> 9] | signs[code[3] >> 9] << 8, dst + 16);
        }
    }
}

// IQ2_S, 82 bytes: f16 d | 32 low index bytes | 32 sign bytes | 8 qh bytes (2 high index bits per entry) | 8 scale
// bytes as IQ2_XS.
TENSORFS_TARGET void iq2_s(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const auto& grid = grids::t::iq2s_grid;
    for (std::size_t b = 0; b < nblocks; ++b, src += 82) {
        const float d = load_f16(src);
        for (std::size_t g = 0; g < 8; ++g, dst += 32) {
            const std::uint8_t* low = src + 2 + 4 * g;
            const unsigned high = src[66 + g];
            const __m256i q = grids::four_entries(grid[low[0] | (high & 3u) << 8], grid[low[1] | (high & 12u) << 6],
                                                  grid[low[2] | (high & 48u) << 4], grid[low[3] | (high & 192u) << 2]);
            const std::uint32_t negate = load_u32(src + 34 + 4 * g);
            const unsigned scales = src[74 + g];
            store16_negated(low_half(q), broadcast(half_step_scale(d, scales & 0xFu, 0.25f)), negate & 0xFFFFu, dst);
            store16_negated(high_half(q), broadcast(half_step_scale(d, scales >> 4, 0.25f)), negate >> 16, dst + 16);
        }
    }
}

// IQ3_XXS, 98 bytes: f16 d | 64 grid index bytes (8 per group, 4 magnitudes per entry) | 8 u32, one per group, of
// four 7-bit sign fields and the 4-bit group scale.
TENSORFS_TARGET void iq3_xxs(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const auto& grid = grids::t::iq3xxs_grid;
    for (std::size_t b = 0; b < nblocks; ++b, src += 98) {
        const float d = load_f16(src);
        for (std::size_t g = 0; g < 8; ++g, dst += 32) {
            const std::uint8_t* index = src + 2 + 8 * g;
            const std::uint32_t signs_and_scale = load_u32(src + 66 + 4 * g);
            const __m256i q = _mm256_setr_epi32(
                static_cast<int>(grid[index[0]]), static_cast<int>(grid[index[1]]), static_cast<int>(grid[index[2]]),
                static_cast<int>(grid[index[3]]), static_cast<int>(grid[index[4]]), static_cast<int>(grid[index[5]]),
                static_cast<int>(grid[index[6]]), static_cast<int>(grid[index[7]]));
            store32_negated(q, broadcast(half_step_scale(d, signs_and_scale >> 28, 0.5f)),
                            grids::expanded_signs(signs_and_scale), dst);
        }
    }
}

// IQ3_S, 110 bytes: f16 d | 64 low index bytes (8 per group) | 8 qh bytes (bit k: the 9th index bit of entry k) |
// 32 sign bytes | 4 scale bytes (one nibble per group, odd scale d * (1 + 2s)).
TENSORFS_TARGET void iq3_s(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const auto& grid = grids::t::iq3s_grid;
    for (std::size_t b = 0; b < nblocks; ++b, src += 110) {
        const float d = load_f16(src);
        for (std::size_t g = 0; g < 8; ++g, dst += 32) {
            const std::uint8_t* low = src + 2 + 8 * g;
            const unsigned high = src[66 + g];
            const auto entry = [&](unsigned k) {
                return static_cast<int>(grid[low[k] | ((high >> k) & 1u) << 8]);
            };
            const __m256i q = _mm256_setr_epi32(entry(0), entry(1), entry(2), entry(3), entry(4), entry(5), entry(6),
                                                entry(7));
            const unsigned s = (src[106 + g / 2] >> (4 * (g % 2))) & 0xFu;
            store32_negated(q, broadcast(d * static_cast<float>(1 + 2 * s)), load_u32(src + 74 + 4 * g), dst);
        }
    }
}

// IQ1_S, 50 bytes: f16 d | 32 low index bytes | 8 u16, one per group: bits 3l..3l+2 are the high index bits of
// entry l, bits 12..14 the group scale, bit 15 the sign of the delta.
TENSORFS_TARGET void iq1_s(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const auto& grid = grids::t::iq1s_grid;
    for (std::size_t b = 0; b < nblocks; ++b, src += 50) {
        const float d = load_f16(src);
        for (std::size_t g = 0; g < 8; ++g, dst += 32) {
            const std::uint8_t* low = src + 2 + 4 * g;
            const unsigned high = load_u16(src + 34 + 2 * g);
            const __m256i entries =
                grids::four_entries(grid[low[0] | (high & 7u) << 8], grid[low[1] | (high & 56u) << 5],
                                    grid[low[2] | (high & 448u) << 2], grid[low[3] | (high & 3584u) >> 1]);
            const __m256i minus = (high & 0x8000u) != 0 ? _mm256_set1_epi8(-1) : _mm256_setzero_si256();
            store32(grids::iq1_values(entries, minus), broadcast(odd_scale(d, (high >> 12) & 7u) * 0.125f), dst);
        }
    }
}

// IQ1_M, 56 bytes: 32 low index bytes | 16 qh bytes, two per group, each nibble = 3 high index bits + the delta
// sign of one entry | 8 scale bytes read as 4 u16: bits 0..11 hold four 3-bit scales (two groups, first and second
// half of each), the top nibbles together the f16 super-block scale.
TENSORFS_TARGET void iq1_m(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    const auto& grid = grids::t::iq1s_grid;
    for (std::size_t b = 0; b < nblocks; ++b, src += 56) {
        std::uint16_t packed[4];
        for (unsigned k = 0; k < 4; ++k) packed[k] = load_u16(src + 48 + 2 * k);
        const std::uint16_t d_bits = static_cast<std::uint16_t>((packed[0] >> 12) | ((packed[1] >> 8) & 0x00F0u) |
                                                                ((packed[2] >> 4) & 0x0F00u) | (packed[3] & 0xF000u));
        const float d = _cvtsh_ss(d_bits);
        for (std::size_t g = 0; g < 8; ++g, dst += 32) {
            const std::uint8_t* low = src + 4 * g;
            const unsigned nibbles = load_u16(src + 32 + 2 * g);  // entry l: bits 4l..4l+3
            const auto entry = [&](unsigned l) { return grid[low[l] | ((nibbles >> (4 * l)) & 7u) << 8]; };
            // Entry l's delta sign is bit 4l + 3: moved to bit 0 of 64-bit lane l, then 0 - bit is 0 or all ones.
            const __m256i sign_bits = _mm256_and_si256(
                _mm256_srlv_epi64(_mm256_set1_epi64x(nibbles), _mm256_setr_epi64x(3, 7, 11, 15)), _mm256_set1_epi64x(1));
            const __m256i minus = _mm256_sub_epi64(_mm256_setzero_si256(), sign_bits);
            const __m256i q = grids::iq1_values(grids::four_entries(entry(0), entry(1), entry(2), entry(3)), minus);
            const unsigned scales = packed[g / 2] >> (6 * (g % 2));
            store16(low_half(q), broadcast(odd_scale(d, scales & 7u) * 0.125f), dst);
            store16(high_half(q), broadcast(odd_scale(d, (scales >> 3) & 7u) * 0.125f), dst + 16);
        }
    }
}
