// Model metadata values as one readable line each: long arrays shortened to their first items, long strings cut.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tensorfs::cli {

// `gguf_type` is the value's GGUF type as model.json's metadata_types spells it ("FLOAT32", "ARRAY[STRING]"), or
// empty (safetensors); it lets float32 values print as the shortest text that reads back to the same float.
// Examples: `llama`, `1e-05`, `[512 items: "<unk>", "<s>", "</s>", ...]`, `{% for m in messages %}... (1234 bytes)`.
std::string metadata_value_text(const nlohmann::ordered_json& value, std::string_view gguf_type);

}  // namespace tensorfs::cli
