// A SOURCE parsed and laid out as the tree a mount would show, for the commands that read a model without FUSE.
#pragma once

#include <string>

#include "tensorfs/catalog.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs {

struct LoadedSource {
    // The model of `source` (`model`: --model PATH) as chosen_model() picks it. Throws InvalidSource, as a mount of
    // the same SOURCE would refuse it, and for a folder of several models with none picked.
    LoadedSource(const std::string& source, const std::string& model, const SourceOptions& options)
        : LoadedSource(chosen_model(source, model, options)) {}
    explicit LoadedSource(Catalog opened) : catalog(std::move(opened)), tree(catalog) {}

    Catalog catalog;
    Tree tree;  // the directory names; names that cannot become directories are refused here too
};

}  // namespace tensorfs
