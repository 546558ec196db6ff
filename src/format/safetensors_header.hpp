// One safetensors file's header, read and checked against the rules of the format's reference library
// (huggingface/safetensors, safetensors/src/tensor.rs: SafeTensors::read_metadata and Metadata::validate).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::safetensors {

struct Header {
    std::uint64_t file_size = 0;
    std::vector<Tensor> tensors;                         // sorted by offset; Tensor::file is left 0
    nlohmann::json metadata = nlohmann::json::object();  // the file's __metadata__: string -> string
};

// Reads the header of `file` with bounded reads and checks every rule, adding one problem (naming the file) per
// broken rule and going on where that still means something. nullopt when any rule broke.
std::optional<Header> read_header(const SourceObject& file, Problems& problems);

}  // namespace tensorfs::safetensors
