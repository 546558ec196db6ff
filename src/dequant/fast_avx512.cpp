// The fast kernels of the AVX-512 path (F, BW, VL and DQ, with AVX2 and F16C), in namespace
// tensorfs::kernels::avx512: every kernel family of fast_*.inl compiled against simd_avx512.inl. As in
// fast_avx2.cpp, each function carries the target attribute, and kernel_path.cpp picks these kernels only on a CPU
// (and operating system) that has the extensions.

// GCC 12's AVX-512 intrinsics hand their builtins a self-initialized "undefined" register, which
// -Wmaybe-uninitialized reports once they are inlined (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fp4_scales.hpp"
#include "ggml_tables.hpp"
#include "half.hpp"
#include "iq_scales.hpp"
#include "k_quant_layout.hpp"
#include "kernels.hpp"

#define TENSORFS_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,fma")))

namespace tensorfs::kernels::avx512 {

#include "simd_avx512.inl"

#include "fast_common.inl"

#include "fast_float16.inl"
#include "fast_grids.inl"
#include "fast_k_quants.inl"
#include "fast_legacy.inl"
#include "fast_low_bit.inl"
#include "fast_nibble_tables.inl"
#include "fast_small_floats.inl"

}  // namespace tensorfs::kernels::avx512
