// Sizes on the command line: a number with an optional unit K, M, G or T (powers of 1024), in any case, with or
// without "iB" or "B" after it (512M, 512m, 512MiB, 512MB).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tensorfs::cli {

std::optional<std::uint64_t> parse_size(std::string_view text);

}  // namespace tensorfs::cli
