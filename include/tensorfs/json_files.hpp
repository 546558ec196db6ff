// The JSON documents of the tree: a tensor's meta.json and the root's model.json.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "tensorfs/catalog.hpp"
#include "tensorfs/model_export.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs {

nlohmann::ordered_json tensor_meta(const Catalog& catalog, std::uint32_t tensor);
// With `model_export`, an "export" entry says what model.safetensors holds, or why there is none.
nlohmann::ordered_json model_meta(const Catalog& catalog, const Tree& tree, const ModelExport* model_export = nullptr);

// Pretty-printed with a final newline; bytes that are not UTF-8 (GGUF strings may hold any bytes) become U+FFFD.
std::string render_json_file(const nlohmann::ordered_json& document);

}  // namespace tensorfs
