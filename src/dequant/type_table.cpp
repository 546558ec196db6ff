// The table of every element type tensorfs knows, for both formats. One row describes one type.
#include <array>

#include "kernels.hpp"
#include "tensorfs/dtype.hpp"

namespace tensorfs {
namespace {

namespace k = kernels;

// A type's portable kernel and its fast ones of the same name (kernels.hpp).
#define WITH_FAST(name) k::name, k::avx2::name, k::avx512::name

// ggml types by id (ggml.h `enum ggml_type`). Ids that ggml retired are absent.
constexpr std::array kGgmlTypes{
    TypeTraits{"F32", 0, 1, 4, k::f32, nullptr, nullptr},
    TypeTraits{"F16", 1, 1, 2, WITH_FAST(f16)},
    TypeTraits{"BF16", 30, 1, 2, WITH_FAST(bf16)},
    TypeTraits{"F64", 28, 1, 8, k::f64, nullptr, nullptr},
    TypeTraits{"I8", 24, 1, 1, k::i8, nullptr, nullptr},
    TypeTraits{"I16", 25, 1, 2, k::i16, nullptr, nullptr},
    TypeTraits{"I32", 26, 1, 4, k::i32, nullptr, nullptr},
    TypeTraits{"I64", 27, 1, 8, k::i64, nullptr, nullptr},
    TypeTraits{"Q4_0", 2, 32, 18, WITH_FAST(q4_0)},
    TypeTraits{"Q4_1", 3, 32, 20, WITH_FAST(q4_1)},
    TypeTraits{"Q5_0", 6, 32, 22, WITH_FAST(q5_0)},
    TypeTraits{"Q5_1", 7, 32, 24, WITH_FAST(q5_1)},
    TypeTraits{"Q8_0", 8, 32, 34, WITH_FAST(q8_0)},
    TypeTraits{"Q2_K", 10, 256, 84, WITH_FAST(q2_k)},
    TypeTraits{"Q3_K", 11, 256, 110, WITH_FAST(q3_k)},
    TypeTraits{"Q4_K", 12, 256, 144, WITH_FAST(q4_k)},
    TypeTraits{"Q5_K", 13, 256, 176, WITH_FAST(q5_k)},
    TypeTraits{"Q6_K", 14, 256, 210, WITH_FAST(q6_k)},
    TypeTraits{"TQ1_0", 34, 256, 54, WITH_FAST(tq1_0)},
    TypeTraits{"TQ2_0", 35, 256, 66, WITH_FAST(tq2_0)},
    TypeTraits{"Q1_0", 41, 128, 18, WITH_FAST(q1_0)},
    TypeTraits{"Q2_0", 42, 64, 18, WITH_FAST(q2_0)},
    TypeTraits{"IQ2_XXS", 16, 256, 66, WITH_FAST(iq2_xxs)},
    TypeTraits{"IQ2_XS", 17, 256, 74, WITH_FAST(iq2_xs)},
    TypeTraits{"IQ3_XXS", 18, 256, 98, WITH_FAST(iq3_xxs)},
    TypeTraits{"IQ1_S", 19, 256, 50, WITH_FAST(iq1_s)},
    TypeTraits{"IQ4_NL", 20, 32, 18, WITH_FAST(iq4_nl)},
    TypeTraits{"IQ3_S", 21, 256, 110, WITH_FAST(iq3_s)},
    TypeTraits{"IQ2_S", 22, 256, 82, WITH_FAST(iq2_s)},
    TypeTraits{"IQ4_XS", 23, 256, 136, WITH_FAST(iq4_xs)},
    TypeTraits{"IQ1_M", 29, 256, 56, WITH_FAST(iq1_m)},
    TypeTraits{"MXFP4", 39, 32, 17, WITH_FAST(mxfp4)},
    TypeTraits{"NVFP4", 40, 64, 36, WITH_FAST(nvfp4)},
    // ggml has no to_float for its dot-product helper types; their tensors show only raw and meta.json.
    TypeTraits{"Q8_1", 9, 32, 36, nullptr, nullptr, nullptr},
    TypeTraits{"Q8_K", 15, 256, 292, nullptr, nullptr, nullptr},
};

// safetensors dtypes (safetensors `Dtype`). Sub-byte types are described as the smallest whole-byte block.
constexpr std::array kSafetensorsDtypes{
    TypeTraits{"BOOL", -1, 1, 1, k::boolean, nullptr, nullptr},
    TypeTraits{"U8", -1, 1, 1, k::u8, nullptr, nullptr},
    TypeTraits{"I8", -1, 1, 1, k::i8, nullptr, nullptr},
    TypeTraits{"U16", -1, 1, 2, k::u16, nullptr, nullptr},
    TypeTraits{"I16", -1, 1, 2, k::i16, nullptr, nullptr},
    TypeTraits{"U32", -1, 1, 4, k::u32, nullptr, nullptr},
    TypeTraits{"I32", -1, 1, 4, k::i32, nullptr, nullptr},
    TypeTraits{"U64", -1, 1, 8, k::u64, nullptr, nullptr},
    TypeTraits{"I64", -1, 1, 8, k::i64, nullptr, nullptr},
    TypeTraits{"F16", -1, 1, 2, WITH_FAST(f16)},
    TypeTraits{"BF16", -1, 1, 2, WITH_FAST(bf16)},
    TypeTraits{"F32", -1, 1, 4, k::f32, nullptr, nullptr},
    TypeTraits{"F64", -1, 1, 8, k::f64, nullptr, nullptr},
    TypeTraits{"C64", -1, 1, 8, nullptr, nullptr, nullptr},
    TypeTraits{"F8_E4M3", -1, 1, 1, WITH_FAST(f8_e4m3)},
    TypeTraits{"F8_E5M2", -1, 1, 1, WITH_FAST(f8_e5m2)},
    TypeTraits{"F8_E4M3FNUZ", -1, 1, 1, WITH_FAST(f8_e4m3fnuz)},
    TypeTraits{"F8_E5M2FNUZ", -1, 1, 1, WITH_FAST(f8_e5m2fnuz)},
    TypeTraits{"F8_E8M0", -1, 1, 1, WITH_FAST(f8_e8m0)},
    TypeTraits{"F4", -1, 2, 1, WITH_FAST(f4_e2m1)},
    TypeTraits{"F6_E2M3", -1, 4, 3, WITH_FAST(f6_e2m3)},
    TypeTraits{"F6_E3M2", -1, 4, 3, WITH_FAST(f6_e3m2)},
};

// PyTorch dtypes, named as torch prints them without "torch.". The same element layouts as the safetensors ones,
// with the same kernels; complex types have no float32 conversion.
constexpr std::array kPytorchDtypes{
    TypeTraits{"bool", -1, 1, 1, k::boolean, nullptr, nullptr},
    TypeTraits{"uint8", -1, 1, 1, k::u8, nullptr, nullptr},
    TypeTraits{"int8", -1, 1, 1, k::i8, nullptr, nullptr},
    TypeTraits{"uint16", -1, 1, 2, k::u16, nullptr, nullptr},
    TypeTraits{"int16", -1, 1, 2, k::i16, nullptr, nullptr},
    TypeTraits{"uint32", -1, 1, 4, k::u32, nullptr, nullptr},
    TypeTraits{"int32", -1, 1, 4, k::i32, nullptr, nullptr},
    TypeTraits{"uint64", -1, 1, 8, k::u64, nullptr, nullptr},
    TypeTraits{"int64", -1, 1, 8, k::i64, nullptr, nullptr},
    TypeTraits{"float16", -1, 1, 2, WITH_FAST(f16)},
    TypeTraits{"bfloat16", -1, 1, 2, WITH_FAST(bf16)},
    TypeTraits{"float32", -1, 1, 4, k::f32, nullptr, nullptr},
    TypeTraits{"float64", -1, 1, 8, k::f64, nullptr, nullptr},
    TypeTraits{"complex32", -1, 1, 4, nullptr, nullptr, nullptr},
    TypeTraits{"complex64", -1, 1, 8, nullptr, nullptr, nullptr},
    TypeTraits{"complex128", -1, 1, 16, nullptr, nullptr, nullptr},
    TypeTraits{"float8_e4m3fn", -1, 1, 1, WITH_FAST(f8_e4m3)},
    TypeTraits{"float8_e5m2", -1, 1, 1, WITH_FAST(f8_e5m2)},
    TypeTraits{"float8_e4m3fnuz", -1, 1, 1, WITH_FAST(f8_e4m3fnuz)},
    TypeTraits{"float8_e5m2fnuz", -1, 1, 1, WITH_FAST(f8_e5m2fnuz)},
    TypeTraits{"float8_e8m0fnu", -1, 1, 1, WITH_FAST(f8_e8m0)},
};

#undef WITH_FAST

}  // namespace

const TypeTraits* ggml_type_by_id(std::uint32_t id) {
    for (const auto& type : kGgmlTypes) {
        if (type.ggml_id == static_cast<int>(id)) return &type;
    }
    return nullptr;
}

const TypeTraits* safetensors_dtype_by_name(std::string_view name) {
    for (const auto& type : kSafetensorsDtypes) {
        if (type.name == name) return &type;
    }
    return nullptr;
}

const TypeTraits* pytorch_dtype_by_name(std::string_view name) {
    for (const auto& type : kPytorchDtypes) {
        if (type.name == name) return &type;
    }
    return nullptr;
}

}  // namespace tensorfs
