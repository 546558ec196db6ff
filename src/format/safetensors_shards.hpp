// The headers of several safetensors files of one folder, opened and read in parallel.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "safetensors_header.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::safetensors {

struct ShardHeader {
    std::string name;                             // relative to the folder
    std::shared_ptr<const SourceObject> file;     // nullptr when the folder has no such file
    std::optional<Header> header;                 // nullopt when the file is missing or broke a rule
    Problems problems;                            // what reading this file found
};

// Opens and reads the header of every file `names` of `folder`, in parallel, in the given order.
std::vector<ShardHeader> read_shard_headers(const SourceFolder& folder, const std::vector<std::string>& names);

}  // namespace tensorfs::safetensors
