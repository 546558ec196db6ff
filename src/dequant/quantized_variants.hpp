// Each path's kernels of tensorfs/quantized_kernels.hpp (see there for what they compute), which
// quantized_kernels.cpp gathers into the paths' tables. The SIMD ones may only run on a CPU with their extensions
// (quantized_kernels.cpp checks); they hand the values their vectors cannot take to the portable ones.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensorfs::quantized {

#define TENSORFS_QUANTIZED_KERNELS                                                                                  \
    void fp8_e4m3_scaled(const std::uint8_t* w, std::size_t n, const float* scales, std::size_t block, float* out); \
    void nvfp4_scaled(const std::uint8_t* packed, std::size_t n, const float* scales, float* out);                  \
    void mxfp4_scaled(const std::uint8_t* packed, std::size_t n, const std::uint8_t* exponents, float* out);        \
    void packed_along_row(const std::uint32_t* words, std::size_t n, unsigned bits, const std::int32_t* zeros,      \
                          const float* scales, std::size_t group, float* out);                                      \
    void field_of_words(const std::uint32_t* words, std::size_t n, unsigned shift, unsigned bits,                   \
                        const std::int32_t* zeros, const float* scales, float* out);                                \
    void awq_row(const std::uint32_t* words, std::size_t n, const std::int32_t* zeros, const float* scales,         \
                 float* out);                                                                                       \
    void transpose(const float* src, std::size_t rows, std::size_t cols, float* dst, std::size_t dst_stride);

// quantized_rows.cpp: plain C++, the reference.
namespace portable {
TENSORFS_QUANTIZED_KERNELS
}
// quantized_avx2.cpp: AVX2 and F16C.
namespace avx2 {
TENSORFS_QUANTIZED_KERNELS
}
// quantized_avx512.cpp: AVX-512 F, BW and VL, with AVX2 and F16C.
namespace avx512 {
TENSORFS_QUANTIZED_KERNELS
}

#undef TENSORFS_QUANTIZED_KERNELS

}  // namespace tensorfs::quantized
