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

#undef TENSORFS_KERNEL

}  // namespace tensorfs::kernels
