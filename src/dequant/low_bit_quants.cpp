// Kernels for ggml's Q1_0 (128 elements, one sign bit each) and Q2_0 (64 elements, 2 bits each).
// Both blocks are an f16 scale d followed by 16 bytes of values packed least significant bits first:
// element j sits in byte j / 8 (Q1_0) or j / 4 (Q2_0). Q1_0 decodes a bit to +d or -d, Q2_0 a field q
// to (q - 1) * d, as ggml's dequantize_row_q1_0 / dequantize_row_q2_0 do.
#include "half.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

constexpr std::size_t kPackedBytes = 16;
constexpr std::size_t kBlockBytes = 2 + kPackedBytes;
constexpr std::size_t kQ1_0Elements = 128;
constexpr std::size_t kQ2_0Elements = 64;

}  // namespace

void q1_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += kBlockBytes) {
        const float d = f16_to_f32(load_u16(src));
        const float value_of_bit[2] = {-d, d};  // a lookup, not a branch: the bits are noise to a predictor
        const std::uint8_t* qs = src + 2;
        for (std::size_t byte = 0; byte < kPackedBytes; ++byte) {
            for (int bit = 0; bit < 8; ++bit) *dst++ = value_of_bit[(qs[byte] >> bit) & 1];
        }
    }
}

void q2_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += kBlockBytes) {
        const float d = f16_to_f32(load_u16(src));
        const std::uint8_t* qs = src + 2;
        for (std::size_t byte = 0; byte < kPackedBytes; ++byte) {
            for (int shift = 0; shift < 8; shift += 2) {
                *dst++ = static_cast<float>(((qs[byte] >> shift) & 3) - 1) * d;
            }
        }
    }
}

static_assert(kQ1_0Elements == kPackedBytes * 8 && kQ2_0Elements == kPackedBytes * 4,
              "Q1_0 / Q2_0 pack their elements into the same 16 bytes");

}  // namespace tensorfs::kernels
