// Kernels for ggml's ternary 256-element types TQ1_0 and TQ2_0: every value is (t - 1) * d with a trit
// t in {0, 1, 2} (TQ2_0's 2-bit field may also hold 3, which decodes to 2 * d like ggml does).
#include "half.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

// TQ1_0 (ggml-common.h block_tq1_0): 48 bytes of 5 trits each, 4 bytes of 4 trits each, then f16 d.
namespace tq1 {
constexpr std::size_t qs = 0;
constexpr std::size_t qs_bytes = 48;
constexpr std::size_t qh = 48;
constexpr std::size_t qh_bytes = 4;
constexpr std::size_t d = 52;
constexpr std::size_t bytes = 54;
}  // namespace tq1

// TQ2_0 (block_tq2_0): 64 bytes of four 2-bit fields each, then f16 d.
namespace tq2 {
constexpr std::size_t qs = 0;
constexpr std::size_t qs_bytes = 64;
constexpr std::size_t d = 64;
constexpr std::size_t bytes = 66;
}  // namespace tq2

// A TQ1_0 byte stores its trits as a base-3 fraction scaled to 0..255, most significant trit first.
// Multiplying by 3^n (wrapping at 256) drops the first n trits; the next one is then (q * 3) >> 8.
constexpr std::uint8_t kPow3[5] = {1, 3, 9, 27, 81};

inline int trit(std::uint8_t packed, std::size_t n) {
    const std::uint8_t shifted = static_cast<std::uint8_t>(packed * kPow3[n]);
    return (shifted * 3) >> 8;
}

// Decodes trit n of each of `count` bytes, for n = 0..trits-1, trit-major (ggml's element order).
inline float* decode_trit_run(const std::uint8_t* bytes, std::size_t count, std::size_t trits, float d,
                              float* dst) {
    for (std::size_t n = 0; n < trits; ++n) {
        for (std::size_t m = 0; m < count; ++m) *dst++ = static_cast<float>(trit(bytes[m], n) - 1) * d;
    }
    return dst;
}

}  // namespace

// TQ1_0 element order: qs bytes 0..31 (5 trits each, 160 elements), qs bytes 32..47 (5 trits each,
// 80 elements), then qh bytes 0..3 (the first 4 trits each, 16 elements).
void tq1_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += tq1::bytes) {
        const float d = f16_to_f32(load_u16(src + tq1::d));
        const std::uint8_t* qs = src + tq1::qs;
        dst = decode_trit_run(qs, 32, 5, d, dst);
        dst = decode_trit_run(qs + 32, tq1::qs_bytes - 32, 5, d, dst);
        dst = decode_trit_run(src + tq1::qh, tq1::qh_bytes, 4, d, dst);
    }
}

// TQ2_0 element order: for each run of 32 qs bytes, bit pair 0 of all 32 bytes, then pair 1, 2, 3.
void tq2_0(const std::uint8_t* src, std::size_t nblocks, float* dst) {
    for (std::size_t b = 0; b < nblocks; ++b, src += tq2::bytes) {
        const float d = f16_to_f32(load_u16(src + tq2::d));
        for (std::size_t run = 0; run < tq2::qs_bytes; run += 32) {
            const std::uint8_t* q = src + tq2::qs + run;
            for (int shift = 0; shift < 8; shift += 2) {
                for (std::size_t m = 0; m < 32; ++m) *dst++ = static_cast<float>(((q[m] >> shift) & 3) - 1) * d;
            }
        }
    }
}

}  // namespace tensorfs::kernels
