// Byte layouts of ggml's K super-block quants (ggml-common.h block_q*_K): offsets from the block start.
// Shared by the portable kernels (k_quants.cpp) and the fast ones (fast_k_quants.inl).
#pragma once

#include <cstddef>

namespace tensorfs::kernels {

namespace q2k {
constexpr std::size_t scales = 0;  // 16 bytes: low nibble scale, high nibble min, one per 16 elements
constexpr std::size_t qs = 16;     // 64 bytes of 2-bit values
constexpr std::size_t d = 80;
constexpr std::size_t dmin = 82;
constexpr std::size_t bytes = 84;
}  // namespace q2k
namespace q3k {
constexpr std::size_t hmask = 0;    // 32 bytes: third bit of each value
constexpr std::size_t qs = 32;      // 64 bytes of low 2-bit values
constexpr std::size_t scales = 96;  // 12 bytes: 16 packed 6-bit scales
constexpr std::size_t d = 108;
constexpr std::size_t bytes = 110;
}  // namespace q3k
namespace q4k {
constexpr std::size_t d = 0;
constexpr std::size_t dmin = 2;
constexpr std::size_t scales = 4;  // 12 bytes: 8 packed 6-bit scales and 8 6-bit mins
constexpr std::size_t qs = 16;     // 128 bytes of 4-bit values
constexpr std::size_t bytes = 144;
}  // namespace q4k
namespace q5k {
constexpr std::size_t d = 0;
constexpr std::size_t dmin = 2;
constexpr std::size_t scales = 4;  // as Q4_K
constexpr std::size_t qh = 16;     // 32 bytes: fifth bit of each value
constexpr std::size_t qs = 48;     // 128 bytes of low 4-bit values
constexpr std::size_t bytes = 176;
}  // namespace q5k
namespace q6k {
constexpr std::size_t ql = 0;       // 128 bytes of low 4-bit values
constexpr std::size_t qh = 128;     // 64 bytes of high 2-bit values
constexpr std::size_t scales = 192; // 16 signed bytes, one per 16 elements
constexpr std::size_t d = 208;
constexpr std::size_t bytes = 210;
}  // namespace q6k

}  // namespace tensorfs::kernels
