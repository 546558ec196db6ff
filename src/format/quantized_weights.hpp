// The quantized weights of a checkpoint of the safetensors world, found by their parts' names (and the config, where
// there is one) and made each into one tensor under its logical name and shape (interface.md, "Quantized
// checkpoints of the safetensors world"):
//
//   scheme          main part (raw)            other parts                                    logical tensor
//   fp8-block/fp8   X.weight F8_E4M3 [o,i]     X.weight_scale_inv or X.weight_scale           X.weight [o,i]
//   nvfp4           X.weight U8 [o,i/2]        X.weight_scale F8_E4M3, X.weight_scale_2       X.weight [o,i]
//   mxfp4           P_blocks U8 [E,R,G,16]     P_scales U8 [E,R,G]                            P [E,G*32,R]
//   gptq            X.qweight I32 [i*b/32,o]   X.qzeros, X.scales, X.g_idx                    X.weight [o,i]
//   awq             X.qweight I32 [i,o*b/32]   X.qzeros, X.scales                             X.weight [o,i]
//   pack-quantized  X.weight_packed I32        X.weight_scale, X.weight_zero_point, X.weight_shape, X.weight_g_idx
//                                                                                             X.weight [o,i]
//
// A weight whose parts do not fit together (a part missing, of the wrong dtype or shape, bits or a variant that is
// not decoded) keeps its logical name, with its main part's shape, and says why in Quantization::problem: it has no
// values, and every other tensor is served as ever.
#pragma once

#include "quantization_config.hpp"
#include "tensorfs/catalog.hpp"

namespace tensorfs {

// Finds the quantized weights of `catalog` and turns each main part into its logical tensor (in place: the order
// of the tensors stays), marking the other parts (Tensor::quantization_part). `declared`: what the model's config
// says (nullptr: it has none). Reads the small parts whose values are shapes (X.weight_shape) from the catalog's
// files; a part that cannot be read is that weight's problem.
void find_quantized_weights(Catalog& catalog, const DeclaredQuantization* declared);

// Whether any tensor of `catalog` is named like a part of a quantized weight: only then is its config worth
// reading (a remote one costs a request).
bool may_hold_quantized_weights(const Catalog& catalog);

}  // namespace tensorfs
