// Split GGUF models as llama.cpp's gguf-split writes them: parts named NAME-0000K-of-0000N.gguf (K from 1),
// each carrying split.no (K - 1), split.count (N) and split.tensors.count (the tensors of all parts).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf_file.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::gguf {

struct SplitName {
    std::string prefix;       // NAME (a file name, no folder)
    std::uint64_t part = 0;   // K, from 1
    std::uint64_t count = 0;  // N
};

// NAME-0000K-of-0000N.gguf split into its pieces; nullopt for a file name of another shape.
std::optional<SplitName> parse_split_name(std::string_view file_name);

// The file name of part `part` of `count` (numbers written with at least 5 digits, as gguf-split does).
std::string split_file_name(std::string_view prefix, std::uint64_t part, std::uint64_t count);

// True when `file` says it is one part of several (split.count > 1).
bool is_split_part(const GgufFile& file, const std::string& path);

// Every part of the split set that `given` (the file `given_name` of `folder`) belongs to, read, checked and in
// order; the other parts are read in parallel. Throws SourceError naming the file when a part is missing,
// belongs to another set, or when the parts' tensors do not add up to split.tensors.count.
std::vector<GgufFile> read_split_parts(GgufFile given, const SourceFolder& folder, const std::string& given_name);

}  // namespace tensorfs::gguf
