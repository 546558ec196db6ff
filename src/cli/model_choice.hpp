// The model a command reads from a SOURCE, chosen as a mount chooses it (open_model): the file named, --model PATH
// in a folder, or the folder's one model; and what the commands say of a folder that holds several.
#pragma once

#include <string>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/model_folder.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs::cli {

// The model of `source` (`model`: --model PATH, "" for none). Throws InvalidSource as a mount would refuse it, and
// for a folder of several models with none picked, with one line naming them and how to pick one.
Catalog chosen_model(const std::string& source, const std::string& model, const SourceOptions& options);

// `ls` and `info` of a folder of several models: the candidates and how to pick one, on stdout; exit status 0.
int list_models(const std::string& source, const std::vector<ModelCandidate>& models);

}  // namespace tensorfs::cli
