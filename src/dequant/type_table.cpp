// The table of every element type tensorfs knows, for both formats. One row describes one type.
#include <array>

#include "kernels.hpp"
#include "tensorfs/dtype.hpp"

namespace tensorfs {
namespace {

namespace k = kernels;

// ggml types by id (ggml.h `enum ggml_type`). Ids that ggml retired are absent.
constexpr std::array kGgmlTypes{
    TypeTraits{"F32", 0, 1, 4, k::f32, nullptr},
    TypeTraits{"F16", 1, 1, 2, k::f16, k::f16_avx2},
    TypeTraits{"BF16", 30, 1, 2, k::bf16, k::bf16_avx2},
    TypeTraits{"F64", 28, 1, 8, k::f64, nullptr},
    TypeTraits{"I8", 24, 1, 1, k::i8, nullptr},
    TypeTraits{"I16", 25, 1, 2, k::i16, nullptr},
    TypeTraits{"I32", 26, 1, 4, k::i32, nullptr},
    TypeTraits{"I64", 27, 1, 8, k::i64, nullptr},
    TypeTraits{"Q4_0", 2, 32, 18, k::q4_0, k::q4_0_avx2},
    TypeTraits{"Q4_1", 3, 32, 20, k::q4_1, nullptr},
    TypeTraits{"Q5_0", 6, 32, 22, k::q5_0, nullptr},
    TypeTraits{"Q5_1", 7, 32, 24, k::q5_1, nullptr},
    TypeTraits{"Q8_0", 8, 32, 34, k::q8_0, k::q8_0_avx2},
    TypeTraits{"Q2_K", 10, 256, 84, k::q2_k, nullptr},
    TypeTraits{"Q3_K", 11, 256, 110, k::q3_k, nullptr},
    TypeTraits{"Q4_K", 12, 256, 144, k::q4_k, k::q4_k_avx2},
    TypeTraits{"Q5_K", 13, 256, 176, k::q5_k, k::q5_k_avx2},
    TypeTraits{"Q6_K", 14, 256, 210, k::q6_k, k::q6_k_avx2},
    TypeTraits{"TQ1_0", 34, 256, 54, k::tq1_0, nullptr},
    TypeTraits{"TQ2_0", 35, 256, 66, k::tq2_0, nullptr},
    TypeTraits{"Q1_0", 41, 128, 18, k::q1_0, nullptr},
    TypeTraits{"Q2_0", 42, 64, 18, k::q2_0, nullptr},
    TypeTraits{"IQ2_XXS", 16, 256, 66, k::iq2_xxs, nullptr},
    TypeTraits{"IQ2_XS", 17, 256, 74, k::iq2_xs, nullptr},
    TypeTraits{"IQ3_XXS", 18, 256, 98, k::iq3_xxs, nullptr},
    TypeTraits{"IQ1_S", 19, 256, 50, k::iq1_s, nullptr},
    TypeTraits{"IQ4_NL", 20, 32, 18, k::iq4_nl, nullptr},
    TypeTraits{"IQ3_S", 21, 256, 110, k::iq3_s, nullptr},
    TypeTraits{"IQ2_S", 22, 256, 82, k::iq2_s, nullptr},
    TypeTraits{"IQ4_XS", 23, 256, 136, k::iq4_xs, k::iq4_xs_avx2},
    TypeTraits{"IQ1_M", 29, 256, 56, k::iq1_m, nullptr},
    TypeTraits{"MXFP4", 39, 32, 17, k::mxfp4, k::mxfp4_avx2},
    TypeTraits{"NVFP4", 40, 64, 36, k::nvfp4, nullptr},
    // ggml has no to_float for its dot-product helper types; their tensors show only raw and meta.json.
    TypeTraits{"Q8_1", 9, 32, 36, nullptr, nullptr},
    TypeTraits{"Q8_K", 15, 256, 292, nullptr, nullptr},
};

// safetensors dtypes (safetensors `Dtype`). Sub-byte types are described as the smallest whole-byte block.
constexpr std::array kSafetensorsDtypes{
    TypeTraits{"BOOL", -1, 1, 1, k::boolean, nullptr},
    TypeTraits{"U8", -1, 1, 1, k::u8, nullptr},
    TypeTraits{"I8", -1, 1, 1, k::i8, nullptr},
    TypeTraits{"U16", -1, 1, 2, k::u16, nullptr},
    TypeTraits{"I16", -1, 1, 2, k::i16, nullptr},
    TypeTraits{"U32", -1, 1, 4, k::u32, nullptr},
    TypeTraits{"I32", -1, 1, 4, k::i32, nullptr},
    TypeTraits{"U64", -1, 1, 8, k::u64, nullptr},
    TypeTraits{"I64", -1, 1, 8, k::i64, nullptr},
    TypeTraits{"F16", -1, 1, 2, k::f16, k::f16_avx2},
    TypeTraits{"BF16", -1, 1, 2, k::bf16, k::bf16_avx2},
    TypeTraits{"F32", -1, 1, 4, k::f32, nullptr},
    TypeTraits{"F64", -1, 1, 8, k::f64, nullptr},
    TypeTraits{"C64", -1, 1, 8, nullptr, nullptr},
    TypeTraits{"F8_E4M3", -1, 1, 1, k::f8_e4m3, nullptr},
    TypeTraits{"F8_E5M2", -1, 1, 1, k::f8_e5m2, nullptr},
    TypeTraits{"F8_E4M3FNUZ", -1, 1, 1, k::f8_e4m3fnuz, nullptr},
    TypeTraits{"F8_E5M2FNUZ", -1, 1, 1, k::f8_e5m2fnuz, nullptr},
    TypeTraits{"F8_E8M0", -1, 1, 1, k::f8_e8m0, nullptr},
    TypeTraits{"F4", -1, 2, 1, k::f4_e2m1, nullptr},
    TypeTraits{"F6_E2M3", -1, 4, 3, k::f6_e2m3, nullptr},
    TypeTraits{"F6_E3M2", -1, 4, 3, k::f6_e3m2, nullptr},
};

// PyTorch dtypes, named as torch prints them without "torch.". The same element layouts as the safetensors ones,
// with the same kernels; complex types have no float32 conversion.
constexpr std::array kPytorchDtypes{
    TypeTraits{"bool", -1, 1, 1, k::boolean, nullptr},
    TypeTraits{"uint8", -1, 1, 1, k::u8, nullptr},
    TypeTraits{"int8", -1, 1, 1, k::i8, nullptr},
    TypeTraits{"uint16", -1, 1, 2, k::u16, nullptr},
    TypeTraits{"int16", -1, 1, 2, k::i16, nullptr},
    TypeTraits{"uint32", -1, 1, 4, k::u32, nullptr},
    TypeTraits{"int32", -1, 1, 4, k::i32, nullptr},
    TypeTraits{"uint64", -1, 1, 8, k::u64, nullptr},
    TypeTraits{"int64", -1, 1, 8, k::i64, nullptr},
    TypeTraits{"float16", -1, 1, 2, k::f16, k::f16_avx2},
    TypeTraits{"bfloat16", -1, 1, 2, k::bf16, k::bf16_avx2},
    TypeTraits{"float32", -1, 1, 4, k::f32, nullptr},
    TypeTraits{"float64", -1, 1, 8, k::f64, nullptr},
    TypeTraits{"complex32", -1, 1, 4, nullptr, nullptr},
    TypeTraits{"complex64", -1, 1, 8, nullptr, nullptr},
    TypeTraits{"complex128", -1, 1, 16, nullptr, nullptr},
    TypeTraits{"float8_e4m3fn", -1, 1, 1, k::f8_e4m3, nullptr},
    TypeTraits{"float8_e5m2", -1, 1, 1, k::f8_e5m2, nullptr},
    TypeTraits{"float8_e4m3fnuz", -1, 1, 1, k::f8_e4m3fnuz, nullptr},
    TypeTraits{"float8_e5m2fnuz", -1, 1, 1, k::f8_e5m2fnuz, nullptr},
    TypeTraits{"float8_e8m0fnu", -1, 1, 1, k::f8_e8m0, nullptr},
};

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

DequantKernel active_kernel(const TypeTraits& type) {
    // Every x86 CPU with AVX2 and FMA also has F16C (clang's __builtin_cpu_supports does not know "f16c").
    static const bool cpu_has_fast_path = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return (type.fast != nullptr && cpu_has_fast_path) ? type.fast : type.portable;
}

}  // namespace tensorfs
