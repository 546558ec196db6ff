// A model made of files of one format, given as a list of files or by an index; each format supplies the
// FileReader that reads one of its files.
#pragma once

#include <string>
#include <vector>

#include "file_contents.hpp"
#include "tensorfs/catalog.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs {

// model_files.cpp: the files `names` of `folder` as one model (one file, or the shards of a folder).
Catalog open_model_files(const SourceFolder& folder, const std::vector<std::string>& names, const std::string& format,
                         const FileReader& reader);

// model_index.cpp: an index `index_name` of `folder` and the shards its weight_map names.
Catalog open_model_index(const SourceFolder& folder, const std::string& index_name, const std::string& format,
                         const FileReader& reader);

}  // namespace tensorfs
