// The one place a stored element type is described: its name, ids, block geometry and dequant kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tensorfs {

// Decodes `nblocks` whole blocks starting at `src` into nblocks * block_elements floats at `dst`.
// Kernels are pure: no allocation, no state, any alignment of `src` and `dst`.
using DequantKernel = void (*)(const std::uint8_t* src, std::size_t nblocks, float* dst);

struct TypeTraits {
    std::string_view name;          // as the format spells it: "Q4_K", "BF16", "F8_E4M3", "bfloat16"
    int ggml_id;                    // ggml type id, or -1 for a safetensors or PyTorch dtype
    std::uint32_t block_elements;   // elements per block (1 for plain scalar types)
    std::uint32_t block_bytes;      // stored bytes per block
    DequantKernel portable;         // reference kernel; nullptr when there is no float32 conversion
    DequantKernel avx2;             // AVX2/F16C variant or nullptr; bit-exact with `portable`
    DequantKernel avx512;           // AVX-512 variant or nullptr; bit-exact with `portable`

    bool has_dequant() const { return portable != nullptr; }
};

// nullptr when the id / name is unknown.
const TypeTraits* ggml_type_by_id(std::uint32_t id);
const TypeTraits* safetensors_dtype_by_name(std::string_view name);
const TypeTraits* pytorch_dtype_by_name(std::string_view name);  // "float32", "bfloat16", "float8_e4m3fn"

// The instruction sets a kernel may use, from the plainest to the widest. Every path's kernels give the same bits.
//   portable  plain C++ for x86-64 (or any CPU)
//   avx2      AVX2 and F16C
//   avx512    AVX-512 F, BW, VL and DQ, with AVX2 and F16C; taken only on CPUs that also have VBMI (see
//             kernel_path.cpp)
enum class KernelPath { portable, avx2, avx512 };

// "portable", "avx2" or "avx512".
std::string_view kernel_path_name(KernelPath path);

// The widest path this CPU (and its operating system) runs.
KernelPath cpu_kernel_path();

// The path every decode of this process uses, chosen once: the CPU's widest, or a lower one named by the
// environment variable TENSORFS_KERNELS (portable, avx2, avx512; a path the CPU lacks gives the CPU's widest).
KernelPath active_kernel_path();

// The kernel `path` runs for `type`: the type's kernel for that path, else its best one for a lower path.
// nullptr when the type has no float32 conversion. `path` must not be wider than cpu_kernel_path().
DequantKernel kernel_for(const TypeTraits& type, KernelPath path);

// kernel_for(type, active_kernel_path()).
DequantKernel active_kernel(const TypeTraits& type);

}  // namespace tensorfs
