// The kernels of tensorfs/quantized_kernels.hpp that each path runs, and the ones this process uses: those of the
// path every other decode takes (active_kernel_path(): the widest the CPU has, or a lower one TENSORFS_KERNELS asks
// for).
#include "tensorfs/quantized_kernels.hpp"

#include <array>
#include <cstddef>

#include "quantized_variants.hpp"
#include "tensorfs/dtype.hpp"

namespace tensorfs {
namespace {

bool quantized_portable_runs() { return true; }

// The extensions quantized_avx2.cpp and quantized_avx512.cpp are compiled for, as kernel_path.cpp checks them
// (every x86 CPU with AVX2 and FMA has F16C; __builtin_cpu_supports also checks that the operating system saves
// the wider registers).
bool quantized_avx2_runs() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool quantized_avx512_runs() {
    return quantized_avx2_runs() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}

// In the order of KernelPath, which indexes it.
constexpr std::array kQuantizedVariants{
    QuantizedKernels{"portable", quantized_portable_runs, quantized::portable::fp8_e4m3_scaled,
                     quantized::portable::nvfp4_scaled, quantized::portable::mxfp4_scaled,
                     quantized::portable::packed_along_row, quantized::portable::field_of_words,
                     quantized::portable::awq_row, quantized::portable::transpose},
    QuantizedKernels{"avx2", quantized_avx2_runs, quantized::avx2::fp8_e4m3_scaled, quantized::avx2::nvfp4_scaled,
                     quantized::avx2::mxfp4_scaled, quantized::avx2::packed_along_row,
                     quantized::avx2::field_of_words, quantized::avx2::awq_row, quantized::avx2::transpose},
    QuantizedKernels{"avx512", quantized_avx512_runs, quantized::avx512::fp8_e4m3_scaled,
                     quantized::avx512::nvfp4_scaled, quantized::avx512::mxfp4_scaled,
                     quantized::avx512::packed_along_row, quantized::avx512::field_of_words,
                     quantized::avx512::awq_row, quantized::avx512::transpose},
};
static_assert(static_cast<std::size_t>(KernelPath::avx512) + 1 == kQuantizedVariants.size());

}  // namespace

const QuantizedKernels& active_quantized_kernels() {
    return kQuantizedVariants[static_cast<std::size_t>(active_kernel_path())];
}

std::span<const QuantizedKernels> quantized_kernel_variants() { return kQuantizedVariants; }

}  // namespace tensorfs
