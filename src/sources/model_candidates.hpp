// The models a folder holds, by the names of its files: the contract's folder rule, told apart from a folder that
// holds several models (GGUF quantizations, a GGUF beside safetensors, several indexes) and so has no one to mount.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tensorfs/model_folder.hpp"

namespace tensorfs {

// The models of a folder whose files directly in it are `names` (sorted). One element: the model the folder rule
// mounts (when it is a set of shards without an index, its path is the first). Several: the folder holds several
// models, each named by the path that mounts it (SOURCE/PATH or -o model=PATH). None: no weights at all.
std::vector<ModelCandidate> models_in(const std::vector<std::string>& names);

// The names in `names` that end with `suffix`, in order.
std::vector<std::string> ending_with(const std::vector<std::string>& names, std::string_view suffix);

// The PyTorch checkpoints among `names`: *.bin, *.pt, *.pth.
std::vector<std::string> pytorch_checkpoints(const std::vector<std::string>& names);

}  // namespace tensorfs
