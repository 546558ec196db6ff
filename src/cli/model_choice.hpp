// What the commands say of a folder that holds several models.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tensorfs/engine.hpp"

namespace tensorfs::cli {

// How the commands say to pick one model of a folder of several.
inline constexpr std::string_view kModelFlag = "--model PATH (-o model=PATH for a mount)";

// `ls` and `info` of a folder of several models: the candidates and how to pick one, on stdout; exit status 0.
int list_models(const std::string& source, const Engine& engine);

}  // namespace tensorfs::cli
