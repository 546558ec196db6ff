// The files of one model (the shards of a folder or an index), opened and read in parallel.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "file_contents.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs {

struct Shard {
    std::string name;                          // relative to the folder
    std::shared_ptr<const SourceObject> file;  // nullptr when the folder has no such file
    std::optional<FileContents> contents;      // nullopt when the file is missing or broke a rule
    Problems problems;                         // what reading this file found
};

// Opens every file `names` of `folder` and reads it with `reader`, in parallel, in the given order.
std::vector<Shard> read_shards(const SourceFolder& folder, const std::vector<std::string>& names,
                               const FileReader& reader);

}  // namespace tensorfs
