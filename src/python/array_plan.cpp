#include "array_plan.hpp"

#include <array>
#include <cstring>

#include "tensorfs/safetensors_dtypes.hpp"

namespace tensorfs::python {
namespace {

// How each safetensors dtype (and PyTorch's complex128, which safetensors lacks) is an array: numpy's dtype ("" when
// numpy has none), and torch's (an attribute of torch, which a given torch may lack).
struct DtypeRow {
    std::string_view safetensors;
    std::string_view numpy;
    std::string_view torch;
    std::size_t bytes;
};

constexpr std::array<DtypeRow, 20> kDtypes{{
    {"F64", "<f8", "float64", 8},
    {"F32", "<f4", "float32", 4},
    {"F16", "<f2", "float16", 2},
    {"BF16", "", "bfloat16", 2},
    {"I64", "<i8", "int64", 8},
    {"I32", "<i4", "int32", 4},
    {"I16", "<i2", "int16", 2},
    {"I8", "|i1", "int8", 1},
    {"U8", "|u1", "uint8", 1},
    {"BOOL", "|b1", "bool", 1},
    {"U16", "<u2", "uint16", 2},
    {"U32", "<u4", "uint32", 4},
    {"U64", "<u8", "uint64", 8},
    {"C64", "<c8", "complex64", 8},
    {"complex128", "<c16", "complex128", 16},
    {"F8_E4M3", "", "float8_e4m3fn", 1},
    {"F8_E5M2", "", "float8_e5m2", 1},
    {"F8_E4M3FNUZ", "", "float8_e4m3fnuz", 1},
    {"F8_E5M2FNUZ", "", "float8_e5m2fnuz", 1},
    {"F8_E8M0", "", "float8_e8m0fnu", 1},
}};

// The signed integers that hold every value of an unsigned one a torch may lack: the row of twice its size.
constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kWider{{{"U16", "I32"}, {"U32", "I64"}}};

const DtypeRow* row_of(std::string_view safetensors) {
    for (const DtypeRow& row : kDtypes) {
        if (row.safetensors == safetensors) return &row;
    }
    return nullptr;
}

// The array for `row`'s elements in `framework`, when the framework has that dtype.
std::optional<ArrayPlan> as_stored(const DtypeRow* row, Framework framework, const TorchHas& torch_has) {
    if (row == nullptr) return std::nullopt;
    ArrayPlan plan;
    plan.item_bytes = row->bytes;
    if (framework == Framework::Numpy) {
        if (row->numpy.empty()) return std::nullopt;
        plan.numpy_dtype = row->numpy;
        return plan;
    }
    if (!torch_has(row->torch)) return std::nullopt;
    plan.torch_dtype = row->torch;
    return plan;
}

// The array of a value view. numpy has no bfloat16: its bits come as uint16, as dequant.bf16 holds them.
ArrayPlan as_view(ValueView view, Framework framework) {
    ArrayPlan plan;
    plan.view = view;
    plan.item_bytes = bytes_per_value(view);
    const auto dtype = [&](std::string_view numpy, std::string_view torch) {
        if (framework == Framework::Torch) {
            plan.torch_dtype = torch;
        } else {
            plan.numpy_dtype = numpy;
        }
    };
    switch (view) {
        case ValueView::F32:
            dtype("<f4", "float32");
            break;
        case ValueView::F16:
            dtype("<f2", "float16");
            break;
        case ValueView::BF16:
            dtype("<u2", "bfloat16");
            break;
    }
    return plan;
}

}  // namespace

std::optional<Framework> framework_named(std::string_view name) {
    if (name == "pt" || name == "torch") return Framework::Torch;
    if (name == "np" || name == "numpy") return Framework::Numpy;
    return std::nullopt;
}

std::optional<ArrayPlan> plan_array(const Tensor& tensor, Framework framework, std::optional<ValueView> requested,
                                    const TorchHas& torch_has) {
    // A quantized weight is its values: float32 unless another view is asked for, as for ggml's quants.
    if (tensor.quantization) {
        if (!tensor.has_values()) return std::nullopt;
        return as_view(requested.value_or(ValueView::F32), framework);
    }
    const TypeTraits& type = *tensor.type;
    const auto safetensors = safetensors_dtype_of(type);
    const std::string_view name = safetensors.value_or(type.name);
    const DtypeRow* row = row_of(name);
    const bool integer = is_integer_dtype(name);
    if (!requested || !type.has_dequant() || integer) {
        if (auto stored = as_stored(row, framework, torch_has)) return stored;
        for (const auto& [narrow, wide] : kWider) {
            if (narrow != name) continue;
            if (auto wider = as_stored(row_of(wide), framework, torch_has)) {
                wider->widened_from = row->bytes;
                return wider;
            }
        }
        // No exact dtype (a uint64 in a torch without one): only the values asked for, never rounded unasked.
        if (!type.has_dequant() || (integer && !requested)) return std::nullopt;
        // No dtype of the framework for a floating type (float8 in numpy): its values, in float32 unless asked.
        return as_view(requested.value_or(ValueView::F32), framework);
    }
    // A floating tensor already stored in the asked encoding is its stored bytes, as the mount's view serves them.
    if (view_stored_as(type) == *requested && tensor.raw_in_c_order) {
        ArrayPlan plan = as_view(*requested, framework);
        plan.view.reset();
        return plan;
    }
    return as_view(*requested, framework);
}

std::string array_dtype_name(const ArrayPlan& plan) {
    for (const DtypeRow& row : kDtypes) {
        const std::string_view dtype = plan.torch_dtype.empty() ? row.numpy : row.torch;
        if (dtype != (plan.torch_dtype.empty() ? plan.numpy_dtype : plan.torch_dtype)) continue;
        return row.safetensors == "complex128" ? "C128" : std::string(row.safetensors);
    }
    return plan.torch_dtype.empty() ? plan.numpy_dtype : plan.torch_dtype;
}

std::string stored_dtype_name(const Tensor& tensor) {
    return std::string(safetensors_dtype_of(*tensor.type).value_or(tensor.type->name));
}

namespace {

template <typename Narrow, typename Wide>
void widen(char* array, std::uint64_t count) {
    const char* stored = array + count * sizeof(Narrow);
    for (std::uint64_t i = 0; i < count; ++i) {
        Narrow value;
        std::memcpy(&value, stored + i * sizeof(Narrow), sizeof(Narrow));
        const Wide wide = value;
        std::memcpy(array + i * sizeof(Wide), &wide, sizeof(Wide));
    }
}

}  // namespace

void widen_in_place(char* array, std::uint64_t count, std::size_t from) {
    if (from == 2) {
        widen<std::uint16_t, std::int32_t>(array, count);
    } else {
        widen<std::uint32_t, std::int64_t>(array, count);
    }
}

}  // namespace tensorfs::python
