// One GGUF file read and checked against ggml's rules: header, key/value pairs, tensor infos, data section.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf_metadata.hpp"
#include "tensorfs/catalog.hpp"

namespace tensorfs::gguf {

struct GgufFile {
    std::string path;                 // how messages name it
    std::shared_ptr<const SourceObject> object;
    std::uint64_t size = 0;
    std::uint32_t version = 0;
    std::uint64_t alignment = 0;
    std::uint64_t data_offset = 0;  // where the data section starts (aligned)
    Metadata metadata;
    std::vector<Tensor> tensors;    // in file order; offsets absolute, `file` left 0 for the caller to set
};

// Reads and checks `file`. Throws SourceError with every problem found: what stops the reading
// (bad magic, unsupported version, a count or length the file cannot hold, a truncated header) alone, the
// others (duplicate names, bad shapes or types, misplaced data) all together.
GgufFile read_gguf_file(std::shared_ptr<const SourceObject> file);

}  // namespace tensorfs::gguf
