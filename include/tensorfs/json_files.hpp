// The JSON documents of the tree: a tensor's meta.json and the root's model.json.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "tensorfs/catalog.hpp"
#include "tensorfs/model_export.hpp"
#include "tensorfs/model_folder.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs {

nlohmann::ordered_json tensor_meta(const Catalog& catalog, std::uint32_t tensor);
// With `model_export`, an "export" entry says what model.safetensors holds, or why there is none.
// model.json's "quantization": each scheme of the quantized weights that can be decoded (scheme, dtype as ls shows
// it, bits, group_size, block, weights) and a line for each weight that cannot be, and for each other problem of the
// model's quantization. null when the model has no quantized weight and no such problem.
nlohmann::ordered_json quantization_summary(const Catalog& catalog);

nlohmann::ordered_json model_meta(const Catalog& catalog, const Tree& tree, const ModelExport* model_export = nullptr);

// What a mount's side files and source/ hold, as `tensorfs ls --files --json` prints it: "side_files" and "source"
// (path and size of each file, as the mount shows them), and "models" for a folder that holds several.
nlohmann::ordered_json folder_files_json(const ModelFolder& folder);

// Pretty-printed with a final newline; bytes that are not UTF-8 (GGUF strings may hold any bytes) become U+FFFD.
std::string render_json_file(const nlohmann::ordered_json& document);

}  // namespace tensorfs
