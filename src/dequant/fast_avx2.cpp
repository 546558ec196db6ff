// The fast kernels of the AVX2 path (AVX2 and F16C), in namespace tensorfs::kernels::avx2: every kernel family of
// fast_*.inl compiled against simd_avx2.inl. Each function carries the target attribute instead of the whole file
// being built with -mavx2, so nothing else in the binary (inline library code included) needs more than x86-64,
// and kernel_path.cpp picks these kernels only on a CPU that has the extensions.
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

#define TENSORFS_TARGET __attribute__((target("avx2,f16c,fma")))

namespace tensorfs::kernels::avx2 {

#include "simd_avx2.inl"

#include "fast_common.inl"

#include "fast_float16.inl"
#include "fast_grids.inl"
#include "fast_k_quants.inl"
#include "fast_legacy.inl"
#include "fast_low_bit.inl"
#include "fast_nibble_tables.inl"
#include "fast_small_floats.inl"

}  // namespace tensorfs::kernels::avx2
