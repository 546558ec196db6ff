// float32 values rounded to 16-bit floats, for dequant.bf16, dequant.f16 and model.safetensors: to nearest, ties
// to even, bit for bit what PyTorch and numpy give.
//
// - bfloat16 as PyTorch's c10::BFloat16 rounds (round_to_nearest_even): the top 16 bits after adding 0x7FFF plus
//   the lowest kept bit; subnormals kept; every NaN becomes the quiet NaN 0x7FC0.
// - IEEE float16 as numpy's astype(float16) (npy_floatbits_to_halfbits): nearest even, subnormal results exact,
//   overflow to +-inf; a NaN keeps its sign and the top 10 bits of its payload (a payload whose top bits are all
//   zero becomes 1, so the result stays a NaN), without being made quiet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tensorfs {

// Converts `count` values; any alignment of `src` and `dst`.
using NarrowKernel = void (*)(const float* src, std::size_t count, std::uint16_t* dst);

std::uint16_t bf16_from_f32(float value);
std::uint16_t f16_from_f32(float value);

// The kernels to run on this CPU (AVX-512, AVX2 or portable, chosen once at the first call).
NarrowKernel active_bf16_kernel();
NarrowKernel active_f16_kernel();

// Every implementation, portable first, for the tests and benchmarks that compare them.
struct NarrowVariant {
    std::string_view name;
    bool (*cpu_supports)();
    NarrowKernel bf16;
    NarrowKernel f16;
};
std::span<const NarrowVariant> narrow_variants();

}  // namespace tensorfs
