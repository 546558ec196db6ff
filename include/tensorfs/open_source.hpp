// Turns a SOURCE argument (file, index, folder, split part, URL, hf:// address) into a Catalog, as the interface
// contract says.
#pragma once

#include <string>

#include "tensorfs/catalog.hpp"
#include "tensorfs/model_folder.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs {

// Parses and checks every header rule. Throws InvalidSource listing the problems found (a remote source that
// cannot be reached, is not found or refuses the credentials is one such problem).
Catalog open_catalog(const std::string& source, const SourceOptions& options = {});

// What a mount shows of SOURCE: its model and the files besides it (side files, source/). `model` is
// `-o model=PATH`: a model of a folder SOURCE, by its path relative to the folder (empty: the folder rule). A
// folder that holds several models and no `model` gives no catalog and lists them. Throws InvalidSource as
// open_catalog does, and for a `model` outside the folder or with a SOURCE that names a file.
OpenedSource open_source(const std::string& source, const std::string& model, const SourceOptions& options);

}  // namespace tensorfs
