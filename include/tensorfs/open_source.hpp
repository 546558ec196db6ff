// Turns a SOURCE argument (file, index, folder, split part, URL, hf:// address) into a Catalog, as the interface
// contract says.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/model_folder.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs {

// The model of SOURCE that a mount shows, without the files besides it: the file SOURCE names, the file `model`
// (`-o model=PATH`) picks in a folder SOURCE, or the folder's one model by the folder rule. A folder that holds
// several models and no `model` gives no catalog, and the candidates.
struct OpenedModel {
    std::optional<Catalog> catalog;
    std::vector<ModelCandidate> models;  // when there is no catalog
    LookedUpFiles looked_up;             // the files of the folder it looked for besides the weights (the config)
};

// Parses and checks every header rule. Throws InvalidSource listing the problems found (a remote source that
// cannot be reached, is not found or refuses the credentials is one such problem), and for a `model` outside the
// folder or with a SOURCE that names a file.
OpenedModel open_model(const std::string& source, const std::string& model, const SourceOptions& options);

// How a user picks one model of a folder that holds several.
inline constexpr const char* kHowToPickAModel =
    "pick one with --model PATH (-o model=PATH for a mount), or name its file as SOURCE";

// open_model's catalog. Throws InvalidSource as open_model does, and for a folder of several models with none
// picked, with one line naming them and how to pick one.
Catalog chosen_model(const std::string& source, const std::string& model, const SourceOptions& options);

// chosen_model with no model picked.
Catalog open_catalog(const std::string& source, const SourceOptions& options = {});

// What a mount shows of SOURCE: open_model's model and the files besides it (side files, source/), with the
// candidates in `folder.models` when there is no model. Throws InvalidSource as open_model does.
OpenedSource open_source(const std::string& source, const std::string& model, const SourceOptions& options);

}  // namespace tensorfs
