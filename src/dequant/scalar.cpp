// Kernels for element types stored one value per element: IEEE floats, integers, booleans.
// Integers and F64 become float32 with one round-to-nearest-even step (a plain C conversion).
#include <cstring>

#include "half.hpp"
#include "kernels.hpp"

namespace tensorfs::kernels {
namespace {

template <typename Stored>
void convert_each(const std::uint8_t* src, std::size_t n, float* dst) {
    for (std::size_t i = 0; i < n; ++i) {
        Stored v;
        std::memcpy(&v, src + i * sizeof(Stored), sizeof v);
        dst[i] = static_cast<float>(v);
    }
}

}  // namespace

void f32(const std::uint8_t* src, std::size_t n, float* dst) {
    if (n > 0) std::memcpy(dst, src, n * sizeof(float));  // an empty tensor may come with null buffers
}

void f16(const std::uint8_t* src, std::size_t n, float* dst) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(load_u16(src + 2 * i));
}

void bf16(const std::uint8_t* src, std::size_t n, float* dst) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load_u16(src + 2 * i));
}

void f64(const std::uint8_t* src, std::size_t n, float* dst) { convert_each<double>(src, n, dst); }
void i8(const std::uint8_t* src, std::size_t n, float* dst) { convert_each<std::int8_t>(src, n, dst); }
void i16(const std::uint8_t* src, std::size_t n, float* dst) { convert_each<std::int16_t>(src, n, dst); }
void i32(const std::uint8_t* src, std::size_t n, float* dst) { convert_each<std::int32_t>(src, n, dst); }
void i64(const std::uint8_t* src, std::size_t n, float* dst) { convert_each<std::int64_t>(src, n, dst); }
void u8(const std::uint8_t* src, std::size_t n, float* dst) { convert_each<std::uint8_t>(src, n, dst); }
void u16(const std::uint8_t* src, std::size_t n, float* dst) { convert_each<std::uint16_t>(src, n, dst); }
void u32(const std::uint8_t* src, std::size_t n, float* dst) { convert_each<std::uint32_t>(src, n, dst); }
void u64(const std::uint8_t* src, std::size_t n, float* dst) { convert_each<std::uint64_t>(src, n, dst); }

void boolean(const std::uint8_t* src, std::size_t n, float* dst) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = src[i] != 0 ? 1.0f : 0.0f;
}

}  // namespace tensorfs::kernels
