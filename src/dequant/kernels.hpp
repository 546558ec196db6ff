// Declarations of every dequant kernel; each family lives in its own .cpp file.
// Signature of all of them: see tensorfs::DequantKernel.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensorfs::kernels {

#define TENSORFS_KERNEL(name) void name(const std::uint8_t* src, std::size_t nblocks, float* dst)

// scalar.cpp: plain IEEE and integer element types (one element per block)
TENSORFS_KERNEL(f32);
TENSORFS_KERNEL(f16);
TENSORFS_KERNEL(bf16);
TENSORFS_KERNEL(f64);
TENSORFS_KERNEL(i8);
TENSORFS_KERNEL(i16);
TENSORFS_KERNEL(i32);
TENSORFS_KERNEL(i64);
TENSORFS_KERNEL(u8);
TENSORFS_KERNEL(u16);
TENSORFS_KERNEL(u32);
TENSORFS_KERNEL(u64);
TENSORFS_KERNEL(boolean);

// ggml block quants, bit-exact with ggml's dequantize_row_*.
// legacy_quants.cpp: 32-element blocks
TENSORFS_KERNEL(q4_0);
TENSORFS_KERNEL(q4_1);
TENSORFS_KERNEL(q5_0);
TENSORFS_KERNEL(q5_1);
TENSORFS_KERNEL(q8_0);
// k_quants.cpp: 256-element super-blocks
TENSORFS_KERNEL(q2_k);
TENSORFS_KERNEL(q3_k);
TENSORFS_KERNEL(q4_k);
TENSORFS_KERNEL(q5_k);
TENSORFS_KERNEL(q6_k);
// ternary_quants.cpp: 256-element ternary blocks
TENSORFS_KERNEL(tq1_0);
TENSORFS_KERNEL(tq2_0);
// low_bit_quants.cpp: Q1_0 (128 elements) and Q2_0 (64 elements)
TENSORFS_KERNEL(q1_0);
TENSORFS_KERNEL(q2_0);

// i_quants.cpp: ggml IQ formats (grid codebooks and non-linear levels, tables in ggml_tables.hpp)
TENSORFS_KERNEL(iq1_s);
TENSORFS_KERNEL(iq1_m);
TENSORFS_KERNEL(iq2_xxs);
TENSORFS_KERNEL(iq2_xs);
TENSORFS_KERNEL(iq2_s);
TENSORFS_KERNEL(iq3_xxs);
TENSORFS_KERNEL(iq3_s);
TENSORFS_KERNEL(iq4_nl);
TENSORFS_KERNEL(iq4_xs);
// fp4_quants.cpp: E2M1 nibbles with an E8M0 (MXFP4) or UE4M3 (NVFP4) scale
TENSORFS_KERNEL(mxfp4);
TENSORFS_KERNEL(nvfp4);

// AVX2/F16C fast paths, bit-exact with the portable kernels of the same type. Callable only on a CPU with
// AVX2, F16C and FMA (type_table.cpp's active_kernel checks); see fast_simd.hpp.
// fast_float.cpp
TENSORFS_KERNEL(f16_avx2);
TENSORFS_KERNEL(bf16_avx2);
// fast_legacy.cpp
TENSORFS_KERNEL(q8_0_avx2);
TENSORFS_KERNEL(q4_0_avx2);
// fast_k_quants.cpp
TENSORFS_KERNEL(q4_k_avx2);
TENSORFS_KERNEL(q5_k_avx2);
TENSORFS_KERNEL(q6_k_avx2);
// fast_iq4_fp4.cpp
TENSORFS_KERNEL(iq4_xs_avx2);
TENSORFS_KERNEL(mxfp4_avx2);

// small_floats.cpp: safetensors 8-bit and sub-byte floats (OCP FP8 and MX element types, FNUZ variants).
// F4 blocks are 1 byte (2 elements), F6 blocks 3 bytes (4 elements); the others take one byte per element.
TENSORFS_KERNEL(f8_e4m3);
TENSORFS_KERNEL(f8_e5m2);
TENSORFS_KERNEL(f8_e4m3fnuz);
TENSORFS_KERNEL(f8_e5m2fnuz);
TENSORFS_KERNEL(f8_e8m0);
TENSORFS_KERNEL(f4_e2m1);
TENSORFS_KERNEL(f6_e2m3);
TENSORFS_KERNEL(f6_e3m2);

#undef TENSORFS_KERNEL

}  // namespace tensorfs::kernels
