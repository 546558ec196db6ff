// What the commands say of a folder that holds several models (the model they read is chosen_model's).
#pragma once

#include <string>
#include <vector>

#include "tensorfs/model_folder.hpp"

namespace tensorfs::cli {

// `ls` and `info` of a folder of several models: the candidates and how to pick one, on stdout; exit status 0.
int list_models(const std::string& source, const std::vector<ModelCandidate>& models);

}  // namespace tensorfs::cli
