// Which tensor of A goes with which tensor of B in `tensorfs diff`: by name, or by llama.cpp's GGUF names when one
// side is a GGUF and the other a Hugging Face checkpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensorfs/catalog.hpp"

namespace tensorfs::compare {

enum class NameMode { Same, Gguf, Auto };

struct TensorPair {
    std::optional<std::uint32_t> a;   // index in A's catalog; nullopt: only in B
    std::optional<std::uint32_t> b;   // index in B's catalog; nullopt: only in A
    // When one side is the GGUF of the other: which side it is, how many heads its rows are permuted over (0: none)
    // and what the converter added to its values (see diff_gguf_names.hpp).
    bool gguf_is_a = false;
    std::uint64_t permuted_heads = 0;
    float added = 0;
};

struct Pairing {
    NameMode mode = NameMode::Same;   // Same or Gguf: what Auto came to
    std::vector<TensorPair> pairs;    // in A's order, then the tensors only in B in B's order
};

// Pairs the tensors whose name (in A or in B) matches `glob` (fnmatch; empty: every tensor). A quantized weight pairs
// by its logical name; its other parts (scales, zero points...) that the other side lacks are left out. Throws
// std::runtime_error when the names cannot be paired as asked: --names gguf without exactly one GGUF side, or for an
// architecture that has no name map.
Pairing pair_tensors(const Catalog& a, const Catalog& b, NameMode mode, const std::string& glob);

}  // namespace tensorfs::compare
