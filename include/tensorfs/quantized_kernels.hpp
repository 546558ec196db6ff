// The kernels of the quantized checkpoints of the safetensors world (FP8 with scales, NVFP4, MXFP4, GPTQ, AWQ,
// compressed-tensors pack-quantized): each turns one row of stored values, with the scales and zero points the
// caller has gathered for that row, into float32, bit for bit as the scheme's reference computes in float32. The
// caller (src/vfs/quantized_values.cpp) reads the parts, picks each row's scales and zeros, and lays the rows out.
//
// Every kernel is pure (no allocation, no state), takes any alignment (the packed words may sit at any byte: they
// are read as bytes), and gives the same bits on every path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tensorfs {

struct QuantizedKernels {
    std::string_view name;  // the path: "portable", "avx2" or "avx512"
    bool (*cpu_supports)();

    // out[c] = f32(w[c] as FP8 E4M3) * scales[c / block] for c < n: the float32 product, NaN for the bytes 0x7F
    // and 0xFF. DeepSeek-V3 inference/kernel.py weight_dequant (block scales), compressed-tensors
    // quantization/lifecycle/forward.py _dequantize (one scale per tensor or per row: block = n). block >= 1.
    // A NaN byte gives its own NaN (sign | 0x7FC00000) whatever its scale; a NaN scale gives its NaN, made quiet.
    void (*fp8_e4m3_scaled)(const std::uint8_t* w, std::size_t n, const float* scales, std::size_t block, float* out);

    // NVFP4 (ModelOpt qtensor/nvfp4_tensor.py): out[c] = e2m1(nibble c) * scales[c / 16], where nibble c is the
    // low nibble of packed[c / 2] for an even c and its high nibble for an odd c. n is even.
    void (*nvfp4_scaled)(const std::uint8_t* packed, std::size_t n, const float* scales, float* out);

    // MXFP4 (gpt-oss gpt_oss/torch/weights.py): out[c] = e2m1(nibble c) * 2^(exponents[c / 32] - 127), nibbles
    // as for nvfp4_scaled; every value of a group whose exponent byte is 255 is NaN (the MX spec's NaN scale).
    // n is even.
    void (*mxfp4_scaled)(const std::uint8_t* packed, std::size_t n, const std::uint8_t* exponents, float* out);

    // Integers packed along the row, lowest bits first (compressed-tensors pack_quantized.py): with
    // per = 32 / bits, q[c] = (words[c / per] >> (bits * (c % per))) & (2^bits - 1), and
    // out[c] = f32(q[c] - zeros[c / group]) * scales[c / group]. bits is 2, 4 or 8; group >= 1. (Here and below,
    // q - zero is the exact difference, rounded once to float32: a zero point may be any int32.)
    void (*packed_along_row)(const std::uint32_t* words, std::size_t n, unsigned bits, const std::int32_t* zeros,
                             const float* scales, std::size_t group, float* out);

    // One field of each word, every column its own word (a stored row of GPTQ's qweight, which packs the input
    // rows of each column): q[c] = (words[c] >> shift) & (2^bits - 1), out[c] = f32(q[c] - zeros[c]) * scales[c].
    // 1 <= bits <= 8, shift + bits <= 32.
    void (*field_of_words)(const std::uint32_t* words, std::size_t n, unsigned shift, unsigned bits,
                           const std::int32_t* zeros, const float* scales, float* out);

    // AWQ's GEMM packing (AutoAWQ awq/utils/packing_utils.py): eight 4-bit fields per word, column c of a word
    // in field kAwqField[c % 8] (the inverse of AWQ's pack order 0 2 4 6 1 3 5 7); q[c] = (words[c / 8] >>
    // (4 * kAwqField[c % 8])) & 15, out[c] = f32(q[c] - zeros[c]) * scales[c]. n need not be a multiple of 8.
    void (*awq_row)(const std::uint32_t* words, std::size_t n, const std::int32_t* zeros, const float* scales,
                    float* out);

    // dst[c * dst_stride + r] = src[r * cols + c]: a rows x cols matrix transposed (GPTQ, AWQ and MXFP4 store the
    // transpose of the weight a model uses), into rows of dst_stride >= rows values (a tile of a larger matrix).
    void (*transpose)(const float* src, std::size_t rows, std::size_t cols, float* dst, std::size_t dst_stride);
};

// The field of a word that holds column c % 8 of AWQ's packing.
inline constexpr unsigned kAwqField[8] = {0, 4, 1, 5, 2, 6, 3, 7};

// The kernels of the path every decode of this process uses (active_kernel_path(), dtype.hpp).
const QuantizedKernels& active_quantized_kernels();

// Every path's kernels, portable first, for the tests and benchmarks that compare them.
std::span<const QuantizedKernels> quantized_kernel_variants();

}  // namespace tensorfs
