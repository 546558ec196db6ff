// Which safetensors dtype a stored element type is, whatever format it came from: what model.safetensors can
// keep as it is, and which tensors already hold one of the value views' encodings.
#pragma once

#include <optional>
#include <string_view>

#include "tensorfs/dtype.hpp"
#include "tensorfs/value_view.hpp"

namespace tensorfs {

// The safetensors dtype name of `type`: its own for a safetensors row, else that of the safetensors dtype with the
// same element encoding (GGUF's F32, F16, BF16, F64 and integers); nullopt for types safetensors lacks (ggml's
// block quants).
std::optional<std::string_view> safetensors_dtype_of(const TypeTraits& type);

// BOOL and the signed and unsigned integers.
bool is_integer_dtype(std::string_view safetensors_dtype);

// The view whose elements have `type`'s encoding (F32, BF16 or F16): the tensor's raw bytes are then that view's
// bytes, when they are in C order.
std::optional<ValueView> view_stored_as(const TypeTraits& type);

}  // namespace tensorfs
