// The portable float32 -> 16-bit conversions and the choice of implementation for this CPU.
#include "tensorfs/f32_to_16.hpp"

#include <cpuid.h>

#include <array>
#include <bit>

#include "f32_to_16_variants.hpp"

namespace tensorfs {
namespace {

constexpr std::uint32_t kMagnitude = 0x7FFFFFFFu;
constexpr std::uint32_t kInfinity = 0x7F800000u;

// CPUID leaf 7 sub-leaf 1, EAX bit 5: AVX512_BF16. (__builtin_cpu_supports does not know it in every compiler
// we build with; the AVX-512 checks below also make sure the OS saves the ZMM registers.)
bool cpu_has_avx512_bf16_instructions() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
    return (eax & (1u << 5)) != 0;
}

// CPUID leaf 1, ECX bit 29: F16C (clang's __builtin_cpu_supports does not know "f16c").
bool cpu_has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    return (ecx & (1u << 29)) != 0;
}

bool always() { return true; }

bool cpu_runs_avx2() { return __builtin_cpu_supports("avx2") && cpu_has_f16c(); }

bool cpu_runs_avx512() {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && cpu_has_avx512_bf16_instructions();
}

constexpr std::array kVariants{
    NarrowVariant{"portable", always, narrow::bf16_portable, narrow::f16_portable},
    NarrowVariant{"avx2", cpu_runs_avx2, narrow::bf16_avx2, narrow::f16_avx2},
    NarrowVariant{"avx512", cpu_runs_avx512, narrow::bf16_avx512, narrow::f16_avx512},
};

// The last variant (the widest) that this CPU runs.
const NarrowVariant& best_variant() {
    static const NarrowVariant& best = [&]() -> const NarrowVariant& {
        const NarrowVariant* chosen = &kVariants.front();
        for (const NarrowVariant& variant : kVariants) {
            if (variant.cpu_supports()) chosen = &variant;
        }
        return *chosen;
    }();
    return best;
}

}  // namespace

std::uint16_t bf16_from_f32(float value) {
    const auto bits = std::bit_cast<std::uint32_t>(value);
    if ((bits & kMagnitude) > kInfinity) return 0x7FC0;
    // Adding 0x7FFF rounds up whatever lies above the half; the kept bit decides the tie. Infinity stays
    // infinity, and the largest values round up to it.
    return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

std::uint16_t f16_from_f32(float value) {
    const auto bits = std::bit_cast<std::uint32_t>(value);
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t magnitude = bits & kMagnitude;
    if (magnitude >= kInfinity) {
        if (magnitude == kInfinity) return sign | 0x7C00u;
        const auto payload = static_cast<std::uint16_t>((magnitude & 0x7FFFFFu) >> 13);
        return sign | 0x7C00u | (payload != 0 ? payload : 1u);
    }
    // From 65520 (half-way between the largest half, 65504, and 65536) up, the nearest even is infinity.
    if (magnitude >= 0x477FF000u) return sign | 0x7C00u;
    auto rounded = [](std::uint32_t kept, std::uint32_t dropped, std::uint32_t half) {
        return kept + ((dropped > half || (dropped == half && (kept & 1u) != 0)) ? 1u : 0u);
    };
    if (magnitude >= 0x38800000u) {
        // A normal half (from 2^-14 up): exponent rebiased from 127 to 15, 13 mantissa bits dropped. A carry out of
        // the mantissa moves into the exponent, which is the correct next value.
        const std::uint32_t rebiased = (magnitude - 0x38000000u) >> 13;
        return static_cast<std::uint16_t>(sign | rounded(rebiased, magnitude & 0x1FFFu, 0x1000u));
    }
    // 2^-25 and below round to zero (2^-25 itself is the tie between 0 and the smallest subnormal: to even, 0).
    if (magnitude <= 0x33000000u) return sign;
    // A subnormal half: the value in units of 2^-24 is the 24-bit significand shifted right by 126 - exponent.
    const std::uint32_t exponent = magnitude >> 23;  // 102 to 112 here
    const std::uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent;
    const std::uint32_t dropped = significand & ((1u << shift) - 1u);
    return static_cast<std::uint16_t>(sign | rounded(significand >> shift, dropped, 1u << (shift - 1)));
}

NarrowKernel active_bf16_kernel() { return best_variant().bf16; }
NarrowKernel active_f16_kernel() { return best_variant().f16; }

std::span<const NarrowVariant> narrow_variants() { return kVariants; }

namespace narrow {

void bf16_portable(const float* src, std::size_t count, std::uint16_t* dst) {
    for (std::size_t i = 0; i < count; ++i) dst[i] = bf16_from_f32(src[i]);
}

void f16_portable(const float* src, std::size_t count, std::uint16_t* dst) {
    for (std::size_t i = 0; i < count; ++i) dst[i] = f16_from_f32(src[i]);
}

}  // namespace narrow
}  // namespace tensorfs
