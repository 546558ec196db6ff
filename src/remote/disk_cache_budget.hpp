// The check of a disk cache's size, shared by the options of the command and of the mount.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "remote/block.hpp"
#include "tensorfs/size_option.hpp"

namespace tensorfs::remote {

// budget_problem for a disk cache size: 0 (no disk cache), or at least one block.
inline std::string disk_cache_size_problem(std::string_view name, std::string_view text, std::uint64_t bytes) {
    if (bytes == 0) return {};
    return budget_problem(name, text, bytes, kBlockBytes, "one block of the disk cache (0 turns it off)");
}

}  // namespace tensorfs::remote
