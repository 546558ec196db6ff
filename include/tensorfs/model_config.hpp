// A model's config, read beside its weights for what the weights' files do not say: how they are quantized.
#pragma once

#include <string>

#include "tensorfs/catalog.hpp"
#include "tensorfs/model_folder.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs {

// The whole text of a model's config file (config.json, hf_quant_config.json); "" when it is larger than any config
// is, or cannot be read.
std::string config_file_text(const SourceObject& file);

// Finds the quantized weights of `catalog` (format/quantized_weights.hpp) with the config of the model whose file
// (or first file) is `model_path` in `folder`: config.json and ModelOpt's hf_quant_config.json in that file's own
// folder, else at the top of `folder`. They are looked for when some tensor is named like a quantized weight's part
// (each look at a remote folder is a request), and config.json also when `listed` says the folder's listing shows
// it, so that a config that declares a quantization its tensors lack is told. A config that is missing, unreadable
// or not JSON declares nothing: the tensors' names decide alone. Every file it looks for goes into `looked_up`.
void find_quantization(Catalog& catalog, const SourceFolder& folder, const std::string& model_path, bool listed,
                       LookedUpFiles& looked_up);

}  // namespace tensorfs
