// Turns a SOURCE argument (file, index, folder, split part) into a Catalog, as the interface contract says.
#pragma once

#include <string>

#include "tensorfs/catalog.hpp"

namespace tensorfs {

// Parses and checks every header rule. Throws InvalidSource listing the problems found.
Catalog open_catalog(const std::string& source);

}  // namespace tensorfs
