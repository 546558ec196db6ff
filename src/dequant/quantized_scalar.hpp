// One value at a time of the kernels of tensorfs/quantized_kernels.hpp: what the portable kernels
// (quantized_rows.cpp) compute for every value, and the SIMD ones (quantized_*avx*.cpp) for the values their
// vectors cannot take. One definition of each step, so that every path gives the same bits.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tensorfs/quantized_kernels.hpp"

namespace tensorfs::quantized {

// The end of the group (or FP8 block) of `group` columns that begins at column `start` < n: none past n.
inline std::size_t group_end(std::size_t start, std::size_t group, std::size_t n) {
    return group < n - start ? start + group : n;
}

// Word i of a packed row. The row comes from stored bytes and may sit at any byte, so it is read as bytes.
inline std::uint32_t load_word(const std::uint32_t* words, std::size_t i) {
    std::uint32_t word;
    std::memcpy(&word, words + i, sizeof word);
    return word;
}

// Field c of a row packed along it, `bits` (2, 4 or 8) bits per value, lowest bits first: 32 / bits fields a word.
inline std::uint32_t packed_field(const std::uint32_t* words, std::size_t c, unsigned bits) {
    const auto per_word_log2 = static_cast<unsigned>(std::countr_zero(32u / bits));
    const std::size_t in_word = c & ((std::size_t{1} << per_word_log2) - 1);
    return (load_word(words, c >> per_word_log2) >> (bits * in_word)) & ((1u << bits) - 1);
}

// Column c of AWQ's packing: eight 4-bit fields a word, in the order kAwqField gives.
inline std::uint32_t awq_field(const std::uint32_t* words, std::size_t c) {
    return (load_word(words, c / 8) >> (4 * kAwqField[c % 8])) & 15u;
}

// f32(q - zero) * scale. The difference is taken in 64 bits: with any int32 zero point it may not fit 32.
inline float integer_value(std::uint32_t q, std::int32_t zero, float scale) {
    return static_cast<float>(std::int64_t{q} - zero) * scale;
}

// Columns [from, to) of one group of a row packed along it, all with the same zero point and scale.
inline void packed_values(const std::uint32_t* words, std::size_t from, std::size_t to, unsigned bits,
                          std::int32_t zero, float scale, float* out) {
    for (std::size_t c = from; c < to; ++c) out[c] = integer_value(packed_field(words, c, bits), zero, scale);
}

// An FP8 value times its scale. A NaN value gives itself, whatever the scale: were the scale a NaN too, the
// product's payload would depend on which operand the compiler puts first. A NaN scale times a number gives the
// scale's NaN, made quiet (x86 passes on the one NaN operand), on every path alike.
inline float fp8_product(float value, float scale) { return std::isnan(value) ? value : value * scale; }

// An MX exponent byte e < 255 as the float 2^(e - 127), exactly: e = 0 is the float32 subnormal 2^-127. Every E2M1
// value times it is then the exact ldexp, or infinity where that overflows (from 2^128 up).
inline float mx_scale(std::uint8_t e) { return std::bit_cast<float>(e == 0 ? 0x00400000u : std::uint32_t{e} << 23); }

// Every value of an MX group whose exponent byte is 255 (the MX NaN scale).
inline constexpr std::uint32_t kMxNanBits = 0x7FC00000u;
inline constexpr std::uint8_t kMxNanExponent = 255;

// The blocks a transpose goes through, 128 rows by 64 columns, each column of tiles from top to bottom: every
// destination row gets 128 values (512 bytes) at a time, and the block's 32 KiB of source can stay in the cache
// until all its columns are read. On 4096 x 4096 and 4096 x 11008 values the AVX-512 tiles ran 1.3 to 1.6 times as
// fast this way as in 64 x 64 blocks walked row by row (one thread, 64 MiB and more, CPU time).
inline constexpr std::size_t kTransposeBlockRows = 128;
inline constexpr std::size_t kTransposeBlockCols = 64;

// dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols.
inline void transpose_tile(const float* src, std::size_t src_stride, std::size_t rows, std::size_t cols, float* dst,
                           std::size_t dst_stride) {
    for (std::size_t c = 0; c < cols; ++c) {
        for (std::size_t r = 0; r < rows; ++r) dst[c * dst_stride + r] = src[r * src_stride + c];
    }
}

}  // namespace tensorfs::quantized
