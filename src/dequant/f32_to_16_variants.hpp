// The SIMD implementations behind tensorfs/f32_to_16.hpp. Each may only run on a CPU with its extensions
// (f32_to_16.cpp checks); each equals the portable conversions bit for bit on every input.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensorfs::narrow {

// AVX2 + F16C.
void bf16_avx2(const float* src, std::size_t count, std::uint16_t* dst);
void f16_avx2(const float* src, std::size_t count, std::uint16_t* dst);

// AVX-512 F + BW + VL; bf16 also AVX512_BF16 (vcvtne2ps2bf16).
void bf16_avx512(const float* src, std::size_t count, std::uint16_t* dst);
void f16_avx512(const float* src, std::size_t count, std::uint16_t* dst);

// The portable loops, for the SIMD variants' tails and the groups they leave to them.
void bf16_portable(const float* src, std::size_t count, std::uint16_t* dst);
void f16_portable(const float* src, std::size_t count, std::uint16_t* dst);

}  // namespace tensorfs::narrow
