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

// The types with fast kernels: each is declared, with the same name as its portable kernel, in namespace avx2
// (fast_avx2.cpp) and in namespace avx512 (fast_avx512.cpp). Those are callable only on a CPU that has the path's
// extensions: kernel_path.cpp checks.
#define TENSORFS_FAST_KERNELS(X)                                                                                  \
    X(f16) X(bf16)                                                        /* fast_float16.inl */                   \
    X(q4_0) X(q4_1) X(q5_0) X(q5_1) X(q8_0) X(iq4_nl)                     /* fast_legacy.inl */                    \
    X(q2_k) X(q3_k) X(q4_k) X(q5_k) X(q6_k)                               /* fast_k_quants.inl */                  \
    X(iq2_xxs) X(iq2_xs) X(iq2_s) X(iq3_xxs) X(iq3_s) X(iq1_s) X(iq1_m)   /* fast_grids.inl */                     \
    X(iq4_xs) X(mxfp4) X(nvfp4)                                           /* fast_nibble_tables.inl */             \
    X(tq1_0) X(tq2_0) X(q1_0) X(q2_0)                                     /* fast_low_bit.inl */                   \
    X(f8_e4m3) X(f8_e5m2) X(f8_e4m3fnuz) X(f8_e5m2fnuz) X(f8_e8m0)        /* fast_small_floats.inl */              \
    X(f4_e2m1) X(f6_e2m3) X(f6_e3m2)

#define TENSORFS_DECLARE_KERNEL(name) TENSORFS_KERNEL(name);
namespace avx2 {
TENSORFS_FAST_KERNELS(TENSORFS_DECLARE_KERNEL)
}
namespace avx512 {
TENSORFS_FAST_KERNELS(TENSORFS_DECLARE_KERNEL)
}
#undef TENSORFS_DECLARE_KERNEL
#undef TENSORFS_FAST_KERNELS
#undef TENSORFS_KERNEL

}  // namespace tensorfs::kernels
