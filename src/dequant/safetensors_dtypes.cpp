#include "tensorfs/safetensors_dtypes.hpp"

#include <array>
#include <span>

namespace tensorfs {
namespace {

// The dtypes of the safetensors table (type_table.cpp), integers first.
constexpr std::array<std::string_view, 9> kIntegerDtypes{"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64"};
constexpr std::array<std::string_view, 13> kOtherDtypes{
    "F16", "BF16", "F32", "F64", "C64", "F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0", "F4",
    "F6_E2M3", "F6_E3M2"};

// Same element encoding: the same conversion to float32 and the same block geometry.
bool same_encoding(const TypeTraits& a, const TypeTraits& b) {
    return a.portable != nullptr && a.portable == b.portable && a.block_elements == b.block_elements &&
           a.block_bytes == b.block_bytes;
}

// The same encoding without a float32 conversion to compare: PyTorch's complex64 is safetensors' C64.
bool same_complex(const TypeTraits& a, const TypeTraits& b) {
    return (a.name == "complex64" && b.name == "C64") || (a.name == "C64" && b.name == "complex64");
}

std::optional<std::string_view> matching(const TypeTraits& type, std::string_view name) {
    const TypeTraits* row = safetensors_dtype_by_name(name);
    if (row != nullptr && (row == &type || same_encoding(*row, type) || same_complex(*row, type))) return row->name;
    return std::nullopt;
}

std::optional<std::string_view> first_matching(const TypeTraits& type, std::span<const std::string_view> names) {
    for (const std::string_view name : names) {
        if (const auto found = matching(type, name)) return found;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string_view> safetensors_dtype_of(const TypeTraits& type) {
    if (const auto integer = first_matching(type, kIntegerDtypes)) return integer;
    return first_matching(type, kOtherDtypes);
}

bool is_integer_dtype(std::string_view safetensors_dtype) {
    for (const std::string_view name : kIntegerDtypes) {
        if (name == safetensors_dtype) return true;
    }
    return false;
}

std::optional<ValueView> view_stored_as(const TypeTraits& type) {
    for (const ValueView view : {ValueView::F32, ValueView::BF16, ValueView::F16}) {
        if (matching(type, dtype_name(view))) return view;
    }
    return std::nullopt;
}

}  // namespace tensorfs
