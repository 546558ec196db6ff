// The root's config.json when model.safetensors is the dequantized model: a loader that reads the config must see a
// plain model, so the config's "quantization_config" goes, and ModelOpt's hf_quant_config.json (which vLLM reads for
// the same purpose) leaves the root. source/ keeps both files as they are.
#pragma once

#include "tensorfs/catalog.hpp"
#include "tensorfs/model_export.hpp"
#include "tensorfs/model_folder.hpp"

namespace tensorfs {

// Makes `folder`'s side files those of the dequantized model when `dtype` converts values (bf16, f16, f32) and
// `catalog` has quantized weights: config.json served without its "quantization_config" (the rest as it was, in
// its order, written as transformers writes a config: two spaces of indent), hf_quant_config.json left out. A
// config.json that cannot be read or is not a JSON object is left as it is. Reads config.json (a request for a
// remote one).
void show_dequantized_config(ModelFolder& folder, const Catalog& catalog, ExportDtype dtype);

}  // namespace tensorfs
