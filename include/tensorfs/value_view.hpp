// The forms in which a tensor's values are served: float32 (dequant.f32, dequant.npy) and its roundings to 16-bit
// floats (dequant.bf16, dequant.f16; see f32_to_16.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tensorfs {

enum class ValueView : std::uint8_t { F32, BF16, F16 };
inline constexpr std::size_t kValueViewCount = 3;

inline constexpr std::size_t bytes_per_value(ValueView view) { return view == ValueView::F32 ? 4 : 2; }

// The safetensors (and ggml) name of the view's element type: "F32", "BF16", "F16".
inline constexpr std::string_view dtype_name(ValueView view) {
    switch (view) {
        case ValueView::BF16: return "BF16";
        case ValueView::F16: return "F16";
        default: return "F32";
    }
}

}  // namespace tensorfs
