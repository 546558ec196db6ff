// What array a tensor becomes for a framework and a dtype request: its stored elements as they are (a dtype the
// framework has), or one of the value views (float32, bfloat16, float16), as the dequant.* files hold them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "tensorfs/catalog.hpp"
#include "tensorfs/value_view.hpp"

namespace tensorfs::python {

enum class Framework { Numpy, Torch };

// "pt"/"torch" or "np"/"numpy"; nullopt for anything else.
std::optional<Framework> framework_named(std::string_view name);

struct ArrayPlan {
    std::optional<ValueView> view;   // nullopt: the stored elements
    std::string numpy_dtype;         // numpy: the array's dtype ("<f4"); torch: ""
    std::string torch_dtype;         // torch: the tensor's dtype, an attribute of torch ("bfloat16"); numpy: ""
    std::size_t item_bytes = 0;
    // Unsigned integers a torch lacks the dtype of, as the next wider signed one, exactly (uint16 as int32, uint32
    // as int64): the bytes of a stored element, which the array's elements widen. 0 for every other array.
    std::size_t widened_from = 0;

    // Bytes of one element as the engine writes it: the stored element of a widened array, else the array's.
    std::size_t written_bytes() const { return widened_from != 0 ? widened_from : item_bytes; }
};

// `requested`: dtype=None (nullopt) keeps the stored dtype where the framework has one, and gives float32 for the
// floating rest; a view converts every floating tensor (quantized ones too) to it, while integers and bools keep
// theirs, as -o export_dtype does. Values are never rounded unasked: unsigned integers a torch lacks the dtype of
// come back widened (widened_from), and a uint64 that no dtype of the framework holds exactly gets the view asked
// for, or none. nullopt when the tensor has neither an exact dtype of the framework nor the values asked for (a
// uint64 in a torch without uint64 and dtype=None; ggml's Q8_1, Q8_K, which have no float32 values): raw() is all
// there is of it. `torch_has(name)` tells whether this torch has a dtype of that name.
using TorchHas = std::function<bool(std::string_view dtype)>;
std::optional<ArrayPlan> plan_array(const Tensor& tensor, Framework framework, std::optional<ValueView> requested,
                                    const TorchHas& torch_has);

// safetensors' name of the dtype of the array a plan makes ("F32", "BF16", "I64"; "C128" for complex128, which
// safetensors lacks): what Slice.get_dtype() says.
std::string array_dtype_name(const ArrayPlan& plan);

// safetensors' dtype name of a tensor's stored type ("U64"), or the type's own name where safetensors has none
// (ggml's "Q8_K"): for messages.
std::string stored_dtype_name(const Tensor& tensor);

// Widens `count` unsigned integers of `from` bytes each, stored at the end of `array` (its last count * from bytes),
// into signed integers of twice the size filling it, in place, first to last: each write lands on bytes already read.
void widen_in_place(char* array, std::uint64_t count, std::size_t from);

}  // namespace tensorfs::python
