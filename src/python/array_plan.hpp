// What array a tensor becomes for a framework and a dtype request: its stored elements as they are (a dtype the
// framework has), or one of the value views (float32, bfloat16, float16), as the dequant.* files hold them.
#pragma once

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
};

// `requested`: dtype=None (nullopt) keeps the stored dtype where the framework has one, and gives float32 for the
// rest; a view converts every floating tensor (quantized ones too) to it, while integers and bools keep theirs where
// the framework has them (else they get the view too), as -o export_dtype does. nullopt when the tensor has neither
// a dtype of the framework nor float32 values (ggml's Q8_1, Q8_K): raw() is all there is of it. `torch_has(name)`
// tells whether this torch has a dtype of that name.
using TorchHas = std::function<bool(std::string_view dtype)>;
std::optional<ArrayPlan> plan_array(const Tensor& tensor, Framework framework, std::optional<ValueView> requested,
                                    const TorchHas& torch_has);

// safetensors' dtype name of a tensor's stored type ("BF16", "I64"), or the type's own name where safetensors has
// none (ggml's "Q4_K"): what Slice.get_dtype() says.
std::string stored_dtype_name(const Tensor& tensor);

}  // namespace tensorfs::python
