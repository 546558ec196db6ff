// Entry points of the format parsers, used by open_source.cpp to assemble a Catalog.
// Every function throws InvalidSource (with all the problems it found) on a source that breaks a rule.
#pragma once

#include <filesystem>
#include <vector>

#include "tensorfs/catalog.hpp"

namespace tensorfs {

// safetensors.cpp: the given files as one model (one file, or the shards of a folder).
// `base` is the folder that SourceFile::display is relative to.
Catalog open_safetensors_files(const std::vector<std::filesystem::path>& files, const std::filesystem::path& base);

// safetensors_index.cpp: a `*.safetensors.index.json` and the shards its weight_map names.
Catalog open_safetensors_index(const std::filesystem::path& index_file);

// gguf.cpp: one GGUF file; when it carries split.count > 1, every part of its split set as one model.
Catalog open_gguf(const std::filesystem::path& file);

}  // namespace tensorfs
