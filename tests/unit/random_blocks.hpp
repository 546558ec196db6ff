// Random stored blocks for kernel tests and the dequant benchmark (bench/bench_dequant.cpp). Fully random
// bytes reach every code path, including NaN and infinite scales; with finite scales, each block's f16 scale
// fields hold a finite value, so both kernels under comparison see ordinary numbers, as in a real model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "tensorfs/dtype.hpp"

namespace tensorfs::test {

// Byte offsets, inside one block, of the f16 fields of a ggml type: its scales and mins (ggml-common.h
// block_* layouts), or for F16 the element itself. Empty for types without plain f16 fields (BF16, MXFP4,
// NVFP4, IQ1_M, integers, F32, F64).
inline std::vector<std::size_t> f16_fields(std::string_view type_name) {
    if (type_name == "Q4_1" || type_name == "Q5_1" || type_name == "Q4_K" || type_name == "Q5_K") return {0, 2};
    if (type_name == "Q2_K") return {80, 82};
    if (type_name == "Q3_K") return {108};
    if (type_name == "Q6_K") return {208};
    if (type_name == "TQ1_0") return {52};
    if (type_name == "TQ2_0") return {64};
    for (std::string_view d_first : {"F16", "Q4_0", "Q5_0", "Q8_0", "Q1_0", "Q2_0", "IQ2_XXS", "IQ2_XS", "IQ2_S",
                                     "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ4_NL", "IQ4_XS"}) {
        if (type_name == d_first) return {0};
    }
    return {};
}

enum class Scales { random, finite };

// `nblocks` blocks of `type` made of random bytes from `seed`. With Scales::finite every f16 field gets a
// random f16 with its top exponent bit clear: |value| < 2, zeros and subnormals included, never inf or NaN.
inline std::vector<std::uint8_t> random_blocks(const TypeTraits& type, std::size_t nblocks, std::uint64_t seed,
                                               Scales scales) {
    std::vector<std::uint8_t> bytes(nblocks * type.block_bytes);
    std::mt19937_64 random(seed);
    std::size_t i = 0;
    for (; i + 8 <= bytes.size(); i += 8) {
        const std::uint64_t word = random();
        std::memcpy(bytes.data() + i, &word, 8);
    }
    for (; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(random());
    if (scales == Scales::finite) {
        for (const std::size_t field : f16_fields(type.name)) {
            for (std::size_t b = 0; b < nblocks; ++b) bytes[b * type.block_bytes + field + 1] &= 0xBF;
        }
    }
    return bytes;
}

}  // namespace tensorfs::test
