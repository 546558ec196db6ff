// GENERATED FILE, do not edit: written by scripts/gen-ggml-tables from the ggml format tables in
// tests/data/vectors/ggml-tables.json. Regenerate from the repository root with:
//   scripts/gen-ggml-tables tests/data/vectors/ggml-tables.json src/dequant

// Lookup tables that define the IQ and FP4 ggml formats, named as ggml names them.
// Grid entries pack one value per byte, element j in bits 8*j .. 8*j+7.
#pragma once

#include <array>
#include <cstdint>

namespace tensorfs::ggml_tables {

// IQ2_XXS, IQ2_XS, IQ3_XXS (7 stored sign bits -> 8 signs with even parity)
extern const std::array<std::uint8_t, 128> ksigns_iq2xs;
// IQ2_XXS: 8 magnitudes per entry, one per byte
extern const std::array<std::uint64_t, 256> iq2xxs_grid;
// IQ2_XS: 8 magnitudes per entry, one per byte
extern const std::array<std::uint64_t, 512> iq2xs_grid;
// IQ2_S: 8 magnitudes per entry, one per byte
extern const std::array<std::uint64_t, 1024> iq2s_grid;
// IQ3_XXS: 4 magnitudes per entry, one per byte
extern const std::array<std::uint32_t, 256> iq3xxs_grid;
// IQ3_S: 4 magnitudes per entry, one per byte
extern const std::array<std::uint32_t, 512> iq3s_grid;
// IQ1_S, IQ1_M: 8 signed values (-1, 0, 1) per entry, one int8 per byte
extern const std::array<std::uint64_t, 2048> iq1s_grid;
// IQ4_NL, IQ4_XS: the 16 non-linear levels
extern const std::array<std::int8_t, 16> kvalues_iq4nl;
// MXFP4, NVFP4: E2M1 values times two (the scale decoders halve to compensate)
extern const std::array<std::int8_t, 16> kvalues_fp4;

// Offset added to every IQ1_S / IQ1_M grid value (its sign is stored per group).
inline constexpr float iq1s_delta = 0x1.0000000000000p-3f;

}  // namespace tensorfs::ggml_tables
