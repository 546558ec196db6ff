// Sizes on the command line: a number with an optional K, M, G or T suffix (powers of 1024).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tensorfs {

std::optional<std::uint64_t> parse_size(std::string_view text);

}  // namespace tensorfs
