// A SOURCE parsed and laid out as the tree a mount would show, for the commands that read a model without FUSE.
#pragma once

#include <string>

#include "tensorfs/catalog.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs {

struct LoadedSource {
    // Throws InvalidSource, as a mount of the same SOURCE would refuse it.
    LoadedSource(const std::string& source, const SourceOptions& options)
        : catalog(open_catalog(source, options)), tree(catalog) {}

    Catalog catalog;
    Tree tree;  // the directory names; names that cannot become directories are refused here too
};

}  // namespace tensorfs
