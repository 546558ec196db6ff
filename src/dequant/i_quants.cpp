// Portable kernels for ggml's "i-quants": IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S (grid codebooks)
// and IQ4_NL, IQ4_XS (a 16-level non-linear table). Each reproduces ggml's dequantize_row_* bit for bit: the
// float operations are done in the same order as ggml does them, because a reordered product can round
// differently.
//
// Common shape of the grid formats: a 256-element super-block with one f16 scale `d`, split into 8 groups of
// 32 elements, each with its own small integer scale. A group is 4 (or 8) grid entries; a grid entry holds 8 (or
// 4) unsigned magnitudes, one per byte. Signs come either as 7 stored bits expanded through ksigns_iq2xs (the 8th
// sign makes the parity even) or as 8 explicit bits.
#include <cstring>

#include "ggml_tables.hpp"
#include "half.hpp"
#include "iq_scales.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

namespace t = ggml_tables;

constexpr std::size_t kSuperBlock = 256;
constexpr std::size_t kGroup = 32;
constexpr std::size_t kGroups = kSuperBlock / kGroup;

// Byte j (0 = least significant) of a packed grid entry.
inline unsigned grid_byte(std::uint64_t entry, unsigned j) { return static_cast<unsigned>(entry >> (8 * j)) & 0xFFu; }
inline int grid_signed_byte(std::uint64_t entry, unsigned j) {
    return static_cast<std::int8_t>(static_cast<std::uint8_t>(grid_byte(entry, j)));
}

inline float apply_sign(float magnitude, unsigned sign_bits, unsigned j) {
    return ((sign_bits >> j) & 1u) != 0 ? -magnitude : magnitude;
}

// 8 outputs from one 8-value grid entry scaled by `scale`, signs from bits 0..7 of `sign_bits`.
inline void decode_grid8(float scale, std::uint64_t entry, unsigned sign_bits, float* dst) {
    for (unsigned j = 0; j < 8; ++j) dst[j] = apply_sign(scale * static_cast<float>(grid_byte(entry, j)), sign_bits, j);
}

// 8 outputs from two 4-value grid entries (the IQ3 formats): signs 0..3 go to the first, 4..7 to the second.
inline void decode_grid4x2(float scale, std::uint32_t first, std::uint32_t second, unsigned sign_bits, float* dst) {
    for (unsigned j = 0; j < 4; ++j) {
        dst[j] = apply_sign(scale * static_cast<float>(grid_byte(first, j)), sign_bits, j);
        dst[j + 4] = apply_sign(scale * static_cast<float>(grid_byte(second, j)), sign_bits, j + 4);
    }
}

}  // namespace

// IQ2_XXS, 66 bytes: f16 d | 8 groups x 8 bytes. A group is 4 grid indices (bytes 0..3) then a little-endian
// u32 holding four 7-bit sign fields (bits 0..27) and the 4-bit group scale (bits 28..31).
void iq2_xxs(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    static_assert(t::iq2xxs_grid.size() == 256 && t::ksigns_iq2xs.size() == 128);
    for (std::size_t b = 0; b < nblocks; ++b, src += 66) {
        const float d = f16_to_f32(load_u16(src));
        for (std::size_t g = 0; g < kGroups; ++g) {
            const std::uint8_t* group = src + 2 + 8 * g;
            const std::uint32_t signs_and_scale = load_u32(group + 4);
            const float scale = half_step_scale(d, signs_and_scale >> 28, 0.25f);
            for (unsigned l = 0; l < 4; ++l, dst += 8) {
                const unsigned signs = t::ksigns_iq2xs[(signs_and_scale >> (7 * l)) & 127u];
                decode_grid8(scale, t::iq2xxs_grid[group[l]], signs, dst);
            }
        }
    }
}

// IQ2_XS, 74 bytes: f16 d | 32 u16 codes (9-bit grid index, 7-bit sign field) | 8 scale bytes, whose low nibble
// scales the first 16 elements of the group and high nibble the last 16.
void iq2_xs(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    static_assert(t::iq2xs_grid.size() == 512 && t::ksigns_iq2xs.size() == 128);
    for (std::size_t b = 0; b < nblocks; ++b, src += 74) {
        const float d = f16_to_f32(load_u16(src));
        const std::uint8_t* codes = src + 2;
        const std::uint8_t* scales = src + 66;
        for (std::size_t g = 0; g < kGroups; ++g) {
            const float half_scales[2] = {half_step_scale(d, scales[g] & 0xFu, 0.25f),
                                          half_step_scale(d, scales[g] >> 4, 0.25f)};
            for (unsigned l = 0; l < 4; ++l, dst += 8) {
                const unsigned code = load_u16(codes + 2 * (4 * g + l));
                decode_grid8(half_scales[l / 2], t::iq2xs_grid[code & 511u], t::ksigns_iq2xs[code >> 9], dst);
            }
        }
    }
}

// IQ2_S, 82 bytes: f16 d | 32 low index bytes | 32 sign bytes | 8 qh bytes (2 high index bits per entry) |
// 8 scale bytes (low nibble: first 16 elements of the group, high nibble: last 16).
void iq2_s(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    static_assert(t::iq2s_grid.size() == 1024);
    for (std::size_t b = 0; b < nblocks; ++b, src += 82) {
        const float d = f16_to_f32(load_u16(src));
        const std::uint8_t* low_index = src + 2;
        const std::uint8_t* signs = src + 34;
        const std::uint8_t* high_index = src + 66;
        const std::uint8_t* scales = src + 74;
        for (std::size_t g = 0; g < kGroups; ++g) {
            const float half_scales[2] = {half_step_scale(d, scales[g] & 0xFu, 0.25f),
                                          half_step_scale(d, scales[g] >> 4, 0.25f)};
            for (unsigned l = 0; l < 4; ++l, dst += 8) {
                const unsigned index = low_index[4 * g + l] | (((high_index[g] >> (2 * l)) & 3u) << 8);
                decode_grid8(half_scales[l / 2], t::iq2s_grid[index], signs[4 * g + l], dst);
            }
        }
    }
}

// IQ3_XXS, 98 bytes: f16 d | 64 grid index bytes (8 per group) | 8 little-endian u32, one per group, with four
// 7-bit sign fields (bits 0..27) and the 4-bit group scale (bits 28..31).
void iq3_xxs(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    static_assert(t::iq3xxs_grid.size() == 256 && t::ksigns_iq2xs.size() == 128);
    for (std::size_t b = 0; b < nblocks; ++b, src += 98) {
        const float d = f16_to_f32(load_u16(src));
        for (std::size_t g = 0; g < kGroups; ++g) {
            const std::uint8_t* index = src + 2 + 8 * g;
            const std::uint32_t signs_and_scale = load_u32(src + 66 + 4 * g);
            const float scale = half_step_scale(d, signs_and_scale >> 28, 0.5f);
            for (unsigned l = 0; l < 4; ++l, dst += 8) {
                const unsigned signs = t::ksigns_iq2xs[(signs_and_scale >> (7 * l)) & 127u];
                decode_grid4x2(scale, t::iq3xxs_grid[index[2 * l]], t::iq3xxs_grid[index[2 * l + 1]], signs, dst);
            }
        }
    }
}

// IQ3_S, 110 bytes: f16 d | 64 low index bytes (8 per group) | 8 qh bytes (the 9th index bit of each of the
// group's 8 entries) | 32 sign bytes | 4 scale bytes (one nibble per group, odd scale d * (1 + 2s)).
void iq3_s(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    static_assert(t::iq3s_grid.size() == 512);
    for (std::size_t b = 0; b < nblocks; ++b, src += 110) {
        const float d = f16_to_f32(load_u16(src));
        const std::uint8_t* low_index = src + 2;
        const std::uint8_t* high_bits = src + 66;
        const std::uint8_t* signs = src + 74;
        const std::uint8_t* scales = src + 106;
        for (std::size_t g = 0; g < kGroups; ++g) {
            const unsigned s = (scales[g / 2] >> (4 * (g % 2))) & 0xFu;
            const float scale = d * static_cast<float>(1 + 2 * s);
            for (unsigned l = 0; l < 4; ++l, dst += 8) {
                const unsigned first = low_index[8 * g + 2 * l] | (((high_bits[g] >> (2 * l)) & 1u) << 8);
                const unsigned second = low_index[8 * g + 2 * l + 1] | (((high_bits[g] >> (2 * l + 1)) & 1u) << 8);
                decode_grid4x2(scale, t::iq3s_grid[first], t::iq3s_grid[second], signs[4 * g + l], dst);
            }
        }
    }
}

namespace {

// 8 outputs of an IQ1 grid entry: scale * (value + delta), values in {-1, 0, 1}.
inline void decode_iq1_grid(float scale, std::uint64_t entry, float delta, float* dst) {
    for (unsigned j = 0; j < 8; ++j) dst[j] = scale * (static_cast<float>(grid_signed_byte(entry, j)) + delta);
}

}  // namespace

// IQ1_S, 50 bytes: f16 d | 32 low index bytes | 8 little-endian u16, one per group: bits 3l..3l+2 are the high
// index bits of entry l, bits 12..14 the group scale, bit 15 the sign of the delta.
void iq1_s(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    static_assert(t::iq1s_grid.size() == 2048);
    for (std::size_t b = 0; b < nblocks; ++b, src += 50) {
        const float d = f16_to_f32(load_u16(src));
        const std::uint8_t* low_index = src + 2;
        for (std::size_t g = 0; g < kGroups; ++g) {
            const unsigned high = load_u16(src + 34 + 2 * g);
            const float scale = odd_scale(d, (high >> 12) & 7u);
            const float delta = (high & 0x8000u) != 0 ? -t::iq1s_delta : t::iq1s_delta;
            for (unsigned l = 0; l < 4; ++l, dst += 8) {
                const unsigned index = low_index[4 * g + l] | (((high >> (3 * l)) & 7u) << 8);
                decode_iq1_grid(scale, t::iq1s_grid[index], delta, dst);
            }
        }
    }
}

// IQ1_M, 56 bytes: 32 low index bytes | 16 qh bytes, two per group, each nibble = 3 high index bits + delta sign
// of one entry | 8 scale bytes read as 4 little-endian u16: their bits 0..11 are four 3-bit scales (two groups,
// first and second half of each), and their top nibbles together form the bits of the f16 super-block scale.
// ggml applies IQ1S_DELTA here too.
void iq1_m(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    static_assert(t::iq1s_grid.size() == 2048);
    for (std::size_t b = 0; b < nblocks; ++b, src += 56) {
        const std::uint8_t* low_index = src;
        const std::uint8_t* high = src + 32;
        std::uint16_t packed[4];
        for (unsigned k = 0; k < 4; ++k) packed[k] = load_u16(src + 48 + 2 * k);
        const std::uint16_t d_bits = static_cast<std::uint16_t>((packed[0] >> 12) | ((packed[1] >> 8) & 0x00F0u) |
                                                                ((packed[2] >> 4) & 0x0F00u) | (packed[3] & 0xF000u));
        const float d = f16_to_f32(d_bits);
        for (std::size_t g = 0; g < kGroups; ++g) {
            const unsigned group_scales = packed[g / 2] >> (6 * (g % 2));
            const float half_scales[2] = {odd_scale(d, group_scales & 7u), odd_scale(d, (group_scales >> 3) & 7u)};
            for (unsigned l = 0; l < 4; ++l, dst += 8) {
                const unsigned nibble = (high[2 * g + l / 2] >> (4 * (l % 2))) & 0xFu;
                const unsigned index = low_index[4 * g + l] | ((nibble & 7u) << 8);
                const float delta = (nibble & 8u) != 0 ? -t::iq1s_delta : t::iq1s_delta;
                decode_iq1_grid(half_scales[l / 2], t::iq1s_grid[index], delta, dst);
            }
        }
    }
}

// IQ4_NL, 18 bytes per 32 elements: f16 d | 16 bytes whose low nibbles are elements 0..15 and high nibbles
// elements 16..31, each an index into kvalues_iq4nl.
void iq4_nl(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    static_assert(t::kvalues_iq4nl.size() == 16);
    for (std::size_t b = 0; b < nblocks; ++b, src += 18, dst += 32) {
        const float d = f16_to_f32(load_u16(src));
        for (std::size_t j = 0; j < 16; ++j) {
            dst[j] = d * static_cast<float>(t::kvalues_iq4nl[src[2 + j] & 0xFu]);
            dst[j + 16] = d * static_cast<float>(t::kvalues_iq4nl[src[2 + j] >> 4]);
        }
    }
}

// IQ4_XS, 136 bytes per 256: f16 d | u16 scales_h (2 high bits per group) | 4 scales_l bytes (a low nibble per
// group) | 8 groups of 16 bytes laid out like IQ4_NL. The 6-bit group scale s gives d * (s - 32).
void iq4_xs(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    static_assert(t::kvalues_iq4nl.size() == 16);
    for (std::size_t b = 0; b < nblocks; ++b, src += 136) {
        const float d = f16_to_f32(load_u16(src));
        const unsigned scales_high = load_u16(src + 2);
        const std::uint8_t* scales_low = src + 4;
        for (std::size_t g = 0; g < kGroups; ++g, dst += 32) {
            const int s = static_cast<int>(((scales_low[g / 2] >> (4 * (g % 2))) & 0xFu) |
                                           (((scales_high >> (2 * g)) & 3u) << 4));
            const float scale = d * static_cast<float>(s - 32);
            const std::uint8_t* q = src + 8 + 16 * g;
            for (std::size_t j = 0; j < 16; ++j) {
                dst[j] = scale * static_cast<float>(t::kvalues_iq4nl[q[j] & 0xFu]);
                dst[j + 16] = scale * static_cast<float>(t::kvalues_iq4nl[q[j] >> 4]);
            }
        }
    }
}

}  // namespace tensorfs::kernels
