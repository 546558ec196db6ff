// Sizes on the command line: a number with an optional unit K, M, G or T (powers of 1024), in any case, with or
// without "iB" or "B" after it (512M, 512m, 512MiB, 512MB).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tensorfs {

std::optional<std::uint64_t> parse_size(std::string_view text);

// Why a budget of `bytes`, given as `name`=`text`, is refused: less than `least` bytes (`what`: "one block"), most
// likely a number whose unit was left out (cache_size=512 for 512M). "" when it holds `least` or more.
std::string budget_problem(std::string_view name, std::string_view text, std::uint64_t bytes, std::uint64_t least,
                           std::string_view what);

}  // namespace tensorfs
