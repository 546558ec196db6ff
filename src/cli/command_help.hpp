// Each command's own usage, for `tensorfs help CMD` and `tensorfs CMD --help`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorfs::cli {

// The names of the commands (for suggesting one for a typo).
std::vector<std::string_view> command_names();

// The usage text of `command`; nullopt for mount (main.cpp prints its part of the whole help) or for a name that
// is no command.
std::optional<std::string> command_usage(std::string_view command);

bool is_command(std::string_view name);

}  // namespace tensorfs::cli
