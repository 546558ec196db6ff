// The group scales of ggml's grid formats, shared by the portable kernels (i_quants.cpp) and the fast ones
// (fast_grids.inl) so that both round them the same way.
#pragma once

namespace tensorfs::kernels {

// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS: a 4-bit integer s gives d * (s + 1/2) * step, rounded in that order.
inline float half_step_scale(float d, unsigned s, float step) { return d * (0.5f + static_cast<float>(s)) * step; }

// IQ1_S, IQ1_M: a 3-bit integer s gives d * (2s + 1).
inline float odd_scale(float d, unsigned s) { return d * static_cast<float>(2 * s + 1); }

}  // namespace tensorfs::kernels
