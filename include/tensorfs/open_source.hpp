// Turns a SOURCE argument (file, index, folder, split part, URL, hf:// address) into a Catalog, as the interface
// contract says.
#pragma once

#include <string>

#include "tensorfs/catalog.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs {

// Parses and checks every header rule. Throws InvalidSource listing the problems found (a remote source that
// cannot be reached, is not found or refuses the credentials is one such problem).
Catalog open_catalog(const std::string& source, const SourceOptions& options = {});

}  // namespace tensorfs
