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
    DequantKernel fast;             // SIMD variant or nullptr; used when the CPU supports it

    bool has_dequant() const { return portable != nullptr; }
};

// nullptr when the id / name is unknown.
const TypeTraits* ggml_type_by_id(std::uint32_t id);
const TypeTraits* safetensors_dtype_by_name(std::string_view name);
const TypeTraits* pytorch_dtype_by_name(std::string_view name);  // "float32", "bfloat16", "float8_e4m3fn"

// The kernel to run here: `fast` when present and the CPU has what it needs, else `portable`.
DequantKernel active_kernel(const TypeTraits& type);

}  // namespace tensorfs
