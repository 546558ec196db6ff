// One safetensors file's header, read and checked against the rules of the format's reference library
// (huggingface/safetensors, safetensors/src/tensor.rs: SafeTensors::read_metadata and Metadata::validate).
#pragma once

#include <optional>

#include "file_contents.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::safetensors {

// Reads the header of `file` with bounded reads and checks every rule, adding one problem (naming the file) per
// broken rule and going on where that still means something. nullopt when any rule broke. The tensors come
// sorted by offset; the metadata is the file's __metadata__ (string -> string).
std::optional<FileContents> read_header(const SourceObject& file, Problems& problems);

}  // namespace tensorfs::safetensors
