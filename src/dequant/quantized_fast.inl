// The kernels of tensorfs/quantized_kernels.hpp as both SIMD paths walk a row: quantized_avx2.cpp and
// quantized_avx512.cpp each define the steps below for registers of kLanes 32-bit values (8 or 16), then include
// this file inside their namespace, as fast_avx2.cpp and fast_avx512.cpp include the fast_*.inl kernel families.
//
//   Floats broadcast(float), Ints splat(std::uint32_t): one value in every lane
//   Floats load_floats(const float*), Ints load_ints(const void*): kLanes values from any address
//   fp8_step(w, scale, out): 16 FP8 E4M3 bytes times one scale
//   e2m1_step(packed, scale, out): the 16 E2M1 values of 8 bytes times one scale
//   store_integers(q, zeros, scales, out): f32(q - zeros) * scales, or false (nothing stored) when a difference
//       overflows 32 bits
//   packed_fields<kBits>(words, c): fields c .. c + kLanes - 1 of a row packed along it, c a multiple of kLanes
//   shifted_fields(words, shift, mask): (words[i] >> shift) & mask
//   awq_fields(words): the kLanes columns of kLanes / 8 words of AWQ's packing
//   transpose_square(src, src_stride, dst, dst_stride): a kLanes x kLanes tile
//
// Bit-exactness with the portable kernels (quantized_rows.cpp): every value is the same one product of the same two
// floats (the build never fuses a multiply with anything), integers convert to float exactly or with the same
// rounding to nearest, and the values a whole register cannot take (row ends, groups that start or end inside a
// register, zero points that make the 32-bit difference overflow, FP8 blocks under 16) go to the portable kernels or
// their steps (quantized_scalar.hpp).

namespace {

template <unsigned kBits>
TENSORFS_TARGET void packed_groups(const std::uint32_t* words, std::size_t n, const std::int32_t* zeros,
                                   const float* scales, std::size_t group, float* out) {
    for (std::size_t start = 0, g = 0; start < n; ++g) {
        const std::size_t end = group_end(start, group, n);
        std::size_t c = std::min(end, (start + kLanes - 1) / kLanes * kLanes);
        packed_values(words, start, c, kBits, zeros[g], scales[g], out);
        const Ints zero = splat(static_cast<std::uint32_t>(zeros[g]));
        const Floats scale = broadcast(scales[g]);
        for (; c + kLanes <= end; c += kLanes) {
            if (!store_integers(packed_fields<kBits>(words, c), zero, scale, out + c)) {
                packed_values(words, c, c + kLanes, kBits, zeros[g], scales[g], out);
            }
        }
        packed_values(words, c, end, kBits, zeros[g], scales[g], out);
        start = end;
    }
}

}  // namespace

TENSORFS_TARGET void fp8_e4m3_scaled(const std::uint8_t* w, std::size_t n, const float* scales, std::size_t block,
                                     float* out) {
    if (block < 16) return portable::fp8_e4m3_scaled(w, n, scales, block, out);  // no whole step per scale
    for (std::size_t start = 0, b = 0; start < n; ++b) {
        const std::size_t end = group_end(start, block, n);
        const Floats scale = broadcast(scales[b]);
        std::size_t c = start;
        for (; c + 16 <= end; c += 16) fp8_step(w + c, scale, out + c);
        if (c < end) portable::fp8_e4m3_scaled(w + c, end - c, scales + b, block, out + c);
        start = end;
    }
}

TENSORFS_TARGET void nvfp4_scaled(const std::uint8_t* packed, std::size_t n, const float* scales, float* out) {
    std::size_t c = 0;
    for (; c + 16 <= n; c += 16) e2m1_step(packed + c / 2, broadcast(scales[c / 16]), out + c);
    portable::nvfp4_scaled(packed + c / 2, n - c, scales + c / 16, out + c);
}

TENSORFS_TARGET void mxfp4_scaled(const std::uint8_t* packed, std::size_t n, const std::uint8_t* exponents,
                                  float* out) {
    std::size_t c = 0;
    for (; c + 32 <= n; c += 32) {
        const std::uint8_t e = exponents[c / 32];
        if (e == kMxNanExponent) {
            std::fill(out + c, out + c + 32, std::bit_cast<float>(kMxNanBits));
            continue;
        }
        const Floats scale = broadcast(mx_scale(e));
        e2m1_step(packed + c / 2, scale, out + c);
        e2m1_step(packed + c / 2 + 8, scale, out + c + 16);
    }
    portable::mxfp4_scaled(packed + c / 2, n - c, exponents + c / 32, out + c);
}

TENSORFS_TARGET void packed_along_row(const std::uint32_t* words, std::size_t n, unsigned bits,
                                      const std::int32_t* zeros, const float* scales, std::size_t group, float* out) {
    switch (bits) {
        case 2:
            return packed_groups<2>(words, n, zeros, scales, group, out);
        case 4:
            return packed_groups<4>(words, n, zeros, scales, group, out);
        default:
            return packed_groups<8>(words, n, zeros, scales, group, out);
    }
}

TENSORFS_TARGET void field_of_words(const std::uint32_t* words, std::size_t n, unsigned shift, unsigned bits,
                                    const std::int32_t* zeros, const float* scales, float* out) {
    const __m128i count = _mm_cvtsi32_si128(static_cast<int>(shift));
    const Ints mask = splat((1u << bits) - 1);
    std::size_t c = 0;
    for (; c + kLanes <= n; c += kLanes) {
        const Ints q = shifted_fields(words + c, count, mask);
        if (!store_integers(q, load_ints(zeros + c), load_floats(scales + c), out + c)) {
            portable::field_of_words(words + c, kLanes, shift, bits, zeros + c, scales + c, out + c);
        }
    }
    portable::field_of_words(words + c, n - c, shift, bits, zeros + c, scales + c, out + c);
}

TENSORFS_TARGET void awq_row(const std::uint32_t* words, std::size_t n, const std::int32_t* zeros,
                             const float* scales, float* out) {
    std::size_t c = 0;
    for (; c + kLanes <= n; c += kLanes) {
        if (!store_integers(awq_fields(words + c / 8), load_ints(zeros + c), load_floats(scales + c), out + c)) {
            portable::awq_row(words + c / 8, kLanes, zeros + c, scales + c, out + c);
        }
    }
    portable::awq_row(words + c / 8, n - c, zeros + c, scales + c, out + c);
}

TENSORFS_TARGET void transpose(const float* src, std::size_t rows, std::size_t cols, float* dst,
                               std::size_t dst_stride) {
    // The blocks of quantized_scalar.hpp in kLanes x kLanes tiles; the rows and columns left over from whole tiles go
    // value by value.
    const std::size_t whole_rows = rows / kLanes * kLanes, whole_cols = cols / kLanes * kLanes;
    for (std::size_t block_row = 0; block_row < whole_rows; block_row += kTransposeBlockRows) {
        const std::size_t row_end = std::min(block_row + kTransposeBlockRows, whole_rows);
        for (std::size_t block_col = 0; block_col < whole_cols; block_col += kTransposeBlockCols) {
            const std::size_t col_end = std::min(block_col + kTransposeBlockCols, whole_cols);
            for (std::size_t c = block_col; c < col_end; c += kLanes) {
                for (std::size_t r = block_row; r < row_end; r += kLanes) {
                    transpose_square(src + r * cols + c, cols, dst + c * dst_stride + r, dst_stride);
                }
            }
        }
    }
    transpose_tile(src + whole_cols, cols, whole_rows, cols - whole_cols, dst + whole_cols * dst_stride, dst_stride);
    transpose_tile(src + whole_rows * cols, cols, rows - whole_rows, cols, dst + whole_rows, dst_stride);
}
