// What a checkpoint's config says of its quantization: config.json's "quantization_config" (transformers writes it
// for every method) and, for ModelOpt exports, hf_quant_config.json. Only what decoding needs is kept; a key that is
// missing or of the wrong kind is left unknown, and the tensors decide (quantized_weights.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorfs/catalog.hpp"

namespace tensorfs {

struct DeclaredQuantization {
    std::string method;                 // quant_method as written ("fp8", "gptq", "compressed-tensors"...)
    std::optional<QuantScheme> scheme;  // the scheme it declares, when tensorfs decodes that scheme
    std::string unsupported;            // a declared variant tensorfs does not decode ("awq version gemv"); "" else
    // What its weights are said to be; 0 or empty where it does not say (or its groups disagree).
    std::vector<unsigned> bits;         // every num_bits / bits it names, without repeats
    std::uint64_t group_size = 0;       // values along a row sharing a scale; 0: per row or not said
    bool per_row = false;               // group_size -1 (GPTQ) or strategy "channel"
    std::uint64_t block_rows = 0;       // fp8-block: weight_block_size (or block_structure)
    std::uint64_t block_columns = 0;
    bool gptq_v2 = false;               // checkpoint_format "gptq_v2": zero points stored as they are
    bool desc_act = false;              // GPTQ act-order: g_idx permutes the groups
};

// The quantization `config_json` (config.json's text) and `hf_quant_config_json` (ModelOpt's file; "" when there is
// none) declare; nullopt when they declare none. Text that is not JSON declares none: config.json is a side file,
// and a broken one is no reason to refuse the weights.
std::optional<DeclaredQuantization> declared_quantization(std::string_view config_json,
                                                          std::string_view hf_quant_config_json);

}  // namespace tensorfs
