// The JSON documents of the tree: a tensor's meta.json and the root's model.json.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "tensorfs/catalog.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs {

nlohmann::ordered_json tensor_meta(const Catalog& catalog, std::uint32_t tensor);
nlohmann::ordered_json model_meta(const Catalog& catalog, const Tree& tree);

// Pretty-printed with a final newline; bytes that are not UTF-8 (GGUF strings may hold any bytes) become U+FFFD.
std::string render_json_file(const nlohmann::ordered_json& document);

}  // namespace tensorfs
