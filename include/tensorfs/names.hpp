// How a tensor's name becomes a directory name (interface contract, "Names").
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace tensorfs {

// Longest directory name most filesystems and tools accept.
inline constexpr std::size_t kMaxDirectoryName = 255;

// `%`, `/`, NUL and a leading `.` become `%XX`; a name equal to a reserved root entry (model.json,
// model.safetensors, source, or one of `also_reserved`: the side files of the mount) gets its first byte escaped; a
// result longer than 255 bytes is cut and given a hash of the full name so names stay unique.
// The name must not be empty.
std::string directory_name_for(std::string_view tensor_name, std::span<const std::string_view> also_reserved = {});

// Whether a tensor's directory name is its name as it is (nearly always): then it needs no copy of its own.
bool is_own_directory_name(std::string_view tensor_name, std::span<const std::string_view> also_reserved = {});

}  // namespace tensorfs
