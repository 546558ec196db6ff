// The portable kernels of tensorfs/quantized_kernels.hpp: the formulas, value by value (quantized_scalar.hpp), in
// plain loops. They are the reference the SIMD paths are tested against, and run where those cannot.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "kernels.hpp"
#include "quantized_scalar.hpp"
#include "quantized_variants.hpp"

namespace tensorfs::quantized::portable {

void fp8_e4m3_scaled(const std::uint8_t* w, std::size_t n, const float* scales, std::size_t block, float* out) {
    kernels::f8_e4m3(w, n, out);  // the FP8 values (small_floats.cpp), NaN codes as sign | 0x7FC00000
    for (std::size_t start = 0, b = 0; start < n; ++b) {
        const std::size_t end = group_end(start, block, n);
        for (std::size_t c = start; c < end; ++c) out[c] = fp8_product(out[c], scales[b]);
        start = end;
    }
}

void nvfp4_scaled(const std::uint8_t* packed, std::size_t n, const float* scales, float* out) {
    kernels::f4_e2m1(packed, n / 2, out);  // the E2M1 values, low nibble first (small_floats.cpp)
    for (std::size_t c = 0; c < n; ++c) out[c] = out[c] * scales[c / 16];
}

void mxfp4_scaled(const std::uint8_t* packed, std::size_t n, const std::uint8_t* exponents, float* out) {
    kernels::f4_e2m1(packed, n / 2, out);
    for (std::size_t c = 0; c < n; ++c) {
        const std::uint8_t e = exponents[c / 32];
        out[c] = e == kMxNanExponent ? std::bit_cast<float>(kMxNanBits) : out[c] * mx_scale(e);
    }
}

void packed_along_row(const std::uint32_t* words, std::size_t n, unsigned bits, const std::int32_t* zeros,
                      const float* scales, std::size_t group, float* out) {
    for (std::size_t start = 0, g = 0; start < n; ++g) {
        const std::size_t end = group_end(start, group, n);
        packed_values(words, start, end, bits, zeros[g], scales[g], out);
        start = end;
    }
}

void field_of_words(const std::uint32_t* words, std::size_t n, unsigned shift, unsigned bits, const std::int32_t* zeros,
                    const float* scales, float* out) {
    const std::uint32_t mask = (1u << bits) - 1;
    for (std::size_t c = 0; c < n; ++c)
        out[c] = integer_value((load_word(words, c) >> shift) & mask, zeros[c], scales[c]);
}

void awq_row(const std::uint32_t* words, std::size_t n, const std::int32_t* zeros, const float* scales, float* out) {
    for (std::size_t c = 0; c < n; ++c) out[c] = integer_value(awq_field(words, c), zeros[c], scales[c]);
}

void transpose(const float* src, std::size_t rows, std::size_t cols, float* dst, std::size_t dst_stride) {
    for (std::size_t r = 0; r < rows; r += kTransposeBlockRows) {
        for (std::size_t c = 0; c < cols; c += kTransposeBlockCols) {
            transpose_tile(src + r * cols + c, cols, std::min(kTransposeBlockRows, rows - r),
                           std::min(kTransposeBlockCols, cols - c), dst + c * dst_stride + r, dst_stride);
        }
    }
}

}  // namespace tensorfs::quantized::portable
