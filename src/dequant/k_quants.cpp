// Kernels for ggml's 256-element "K" super-block quants: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
// A super-block holds f16 super-scales plus small per-sub-block scales (and mins); element values are
// (super-scale * sub-scale) * q [- super-min * sub-min], computed in ggml's dequantize_row_* order with
// each product and difference rounded separately, so the results are identical bit for bit.
#include "half.hpp"
#include "k_quant_layout.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

// dl * q - ml as two separately rounded steps, like ggml (a fused multiply-add would round once).
inline float scale_minus_min(int q, float dl, float ml) {
    const float scaled = dl * static_cast<float>(q);
    return scaled - ml;
}

// Q4_K / Q5_K: scale and min of sub-block j (0..7) from the 12 packed bytes. Sub-blocks 0..3 use the low
// 6 bits of bytes j and j + 4; sub-blocks 4..7 take 4 bits from byte j + 4 and their top 2 bits from
// the spare high bits of bytes j - 4 (scale) and j (min).
struct ScaleMin {
    int scale;
    int min;
};
inline ScaleMin scale_min_k4(std::size_t j, const std::uint8_t* s) {
    if (j < 4) return {s[j] & 63, s[j + 4] & 63};
    return {(s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)};
}

// Q3_K: the 16 scales, 6 bits each, stored as 16 low nibbles (bytes 0..7, low then high nibble half)
// and 16 2-bit high parts (bytes 8..11); the stored value is offset by 32.
inline void unpack_q3k_scales(const std::uint8_t* s, int* scales) {
    for (std::size_t j = 0; j < 16; ++j) {
        const int low = j < 8 ? (s[j] & 0x0F) : (s[j - 8] >> 4);
        const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        scales[j] = (low | (high << 4)) - 32;
    }
}

}  // namespace

// Q2_K: 16 sub-blocks of 16. Each 128-element half reads 32 bytes of qs four times (bit pairs 0..3);
// each pass covers two sub-blocks (bytes 0..15, then 16..31).
void q2_k(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += q2k::bytes) {
        const float d = f16_to_f32(load_u16(src + q2k::d));
        const float dmin = f16_to_f32(load_u16(src + q2k::dmin));
        const std::uint8_t* scales = src + q2k::scales;
        const std::uint8_t* q = src + q2k::qs;
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (std::size_t part = 0; part < 2; ++part) {
                    const std::uint8_t sc = *scales++;
                    const float dl = d * static_cast<float>(sc & 0x0F);
                    const float ml = dmin * static_cast<float>(sc >> 4);
                    for (std::size_t l = 0; l < 16; ++l) {
                        *dst++ = scale_minus_min((q[16 * part + l] >> shift) & 3, dl, ml);
                    }
                }
            }
        }
    }
}

// Q3_K: like Q2_K's walk, with a third bit from hmask (bit clear means subtract 4) and signed scales.
void q3_k(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += q3k::bytes) {
        const float d = f16_to_f32(load_u16(src + q3k::d));
        int scales[16];
        unpack_q3k_scales(src + q3k::scales, scales);
        const std::uint8_t* hmask = src + q3k::hmask;
        const std::uint8_t* q = src + q3k::qs;
        const int* scale = scales;
        unsigned mask = 1;
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, mask <<= 1) {
                for (std::size_t part = 0; part < 2; ++part) {
                    const float dl = d * static_cast<float>(*scale++);
                    for (std::size_t l = 0; l < 16; ++l) {
                        const std::size_t i = 16 * part + l;
                        const int value = ((q[i] >> shift) & 3) - ((hmask[i] & mask) ? 0 : 4);
                        *dst++ = dl * static_cast<float>(value);
                    }
                }
            }
        }
    }
}

// Q4_K: 4 chunks of 64 = 32 bytes of qs; low nibbles are sub-block 2c, high nibbles sub-block 2c + 1.
void q4_k(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += q4k::bytes) {
        const float d = f16_to_f32(load_u16(src + q4k::d));
        const float dmin = f16_to_f32(load_u16(src + q4k::dmin));
        const std::uint8_t* scales = src + q4k::scales;
        const std::uint8_t* q = src + q4k::qs;
        for (std::size_t chunk = 0; chunk < 4; ++chunk, q += 32) {
            const ScaleMin lo = scale_min_k4(2 * chunk, scales);
            const ScaleMin hi = scale_min_k4(2 * chunk + 1, scales);
            const float d1 = d * static_cast<float>(lo.scale), m1 = dmin * static_cast<float>(lo.min);
            const float d2 = d * static_cast<float>(hi.scale), m2 = dmin * static_cast<float>(hi.min);
            for (std::size_t l = 0; l < 32; ++l) *dst++ = scale_minus_min(q[l] & 0x0F, d1, m1);
            for (std::size_t l = 0; l < 32; ++l) *dst++ = scale_minus_min(q[l] >> 4, d2, m2);
        }
    }
}

// Q5_K: Q4_K plus a fifth bit; chunk c takes bit 2c (low nibbles) and 2c + 1 (high nibbles) of qh[l].
void q5_k(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += q5k::bytes) {
        const float d = f16_to_f32(load_u16(src + q5k::d));
        const float dmin = f16_to_f32(load_u16(src + q5k::dmin));
        const std::uint8_t* scales = src + q5k::scales;
        const std::uint8_t* qh = src + q5k::qh;
        const std::uint8_t* q = src + q5k::qs;
        for (std::size_t chunk = 0; chunk < 4; ++chunk, q += 32) {
            const ScaleMin lo = scale_min_k4(2 * chunk, scales);
            const ScaleMin hi = scale_min_k4(2 * chunk + 1, scales);
            const float d1 = d * static_cast<float>(lo.scale), m1 = dmin * static_cast<float>(lo.min);
            const float d2 = d * static_cast<float>(hi.scale), m2 = dmin * static_cast<float>(hi.min);
            const unsigned lo_bit = 1u << (2 * chunk), hi_bit = 2u << (2 * chunk);
            for (std::size_t l = 0; l < 32; ++l) {
                *dst++ = scale_minus_min((q[l] & 0x0F) + ((qh[l] & lo_bit) ? 16 : 0), d1, m1);
            }
            for (std::size_t l = 0; l < 32; ++l) {
                *dst++ = scale_minus_min((q[l] >> 4) + ((qh[l] & hi_bit) ? 16 : 0), d2, m2);
            }
        }
    }
}

// Q6_K: per 128-element half, 64 bytes of ql and 32 of qh: element l + 32k (k = 0..3) takes the low or
// high nibble of ql[l] / ql[l + 32] and bit pair k of qh[l]; the value is offset by 32. ggml multiplies
// d by the sub-block scale first, then by the value.
void q6_k(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += q6k::bytes) {
        const float d = f16_to_f32(load_u16(src + q6k::d));
        const std::uint8_t* ql = src + q6k::ql;
        const std::uint8_t* qh = src + q6k::qh;
        const std::uint8_t* sc = src + q6k::scales;
        for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, dst += 128) {
            float ds[8];
            for (std::size_t s = 0; s < 8; ++s) ds[s] = d * static_cast<float>(static_cast<std::int8_t>(sc[s]));
            for (std::size_t l = 0; l < 32; ++l) {
                const std::size_t is = l < 16 ? 0 : 1;  // sub-block of 16 within each 32-element run
                const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                dst[l] = ds[is] * static_cast<float>(q1);
                dst[l + 32] = ds[is + 2] * static_cast<float>(q2);
                dst[l + 64] = ds[is + 4] * static_cast<float>(q3);
                dst[l + 96] = ds[is + 6] * static_cast<float>(q4);
            }
        }
    }
}

}  // namespace tensorfs::kernels
