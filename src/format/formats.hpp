// Entry points of the format parsers, used by open_source.cpp to assemble a Catalog. Files are named relative to
// the folder that holds the source (SourceFile::display keeps those names).
// Every function throws SourceError (with all the problems it found) on a source that breaks a rule.
#pragma once

#include <string>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs {

// safetensors.cpp: the files `names` of `folder` as one model (one file, or the shards of a folder).
Catalog open_safetensors_files(const SourceFolder& folder, const std::vector<std::string>& names);

// safetensors.cpp: a `*.safetensors.index.json` and the shards its weight_map names.
Catalog open_safetensors_index(const SourceFolder& folder, const std::string& index_name);

// pytorch.cpp: the PyTorch checkpoints `names` of `folder` as one model (one file, or the shards of a folder).
Catalog open_pytorch_files(const SourceFolder& folder, const std::vector<std::string>& names);

// pytorch.cpp: a `*.bin.index.json` and the PyTorch shards its weight_map names.
Catalog open_pytorch_index(const SourceFolder& folder, const std::string& index_name);

// gguf.cpp: one GGUF file; when it carries split.count > 1, every part of its split set as one model.
Catalog open_gguf(const SourceFolder& folder, const std::string& name);

}  // namespace tensorfs
