// The comparison of one pair of `tensorfs diff`: both tensors' float32 values streamed in step through a
// DequantReader each (the decoded chunks of a mount, decoded ahead by its workers on every core, within the cache
// budget), their sums accumulated chunk by chunk straight from the chunks, so that memory stays bounded whatever the
// tensors' sizes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "diff_metrics.hpp"
#include "diff_pairs.hpp"
#include "tensorfs/dequant_reader.hpp"
#include "tensorfs/loaded_source.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/stats.hpp"

namespace tensorfs::compare {

// One side of a diff: its SOURCE, parsed, and read as a mount would.
struct DiffSide {
    // Throws InvalidSource as `tensorfs cat SOURCE` would (`model`: --model PATH).
    DiffSide(const std::string& source, const std::string& model, const SourceOptions& options,
             std::uint64_t cache_budget)
        : path(source), loaded(source, model, options), files(loaded.catalog), values(loaded.catalog, files, stats,
                                                                                cache_budget) {}

    const Catalog& catalog() const { return loaded.catalog; }

    std::string path;
    LoadedSource loaded;
    SourceFiles files;
    Stats stats;
    DequantReader values;   // the float32 values, as dequant.f32 holds them
};

enum class PairStatus { Identical, Different, ShapeMismatch, OnlyInA, OnlyInB };

struct PairResult {
    TensorPair pair;
    PairStatus status = PairStatus::Identical;
    bool values_compared = false;  // false: unpaired, shapes differ, or a side has no float32 values
    bool bytes_identical = false;  // same encoding and the same stored bytes
    DiffSums sums;
};

// Float32 bytes of both sides that a pair's comparison reads (what the progress line counts).
std::uint64_t values_bytes(const DiffSide& a, const DiffSide& b, const TensorPair& pair);

// Compares one pair; `progressed(bytes)` is told of the float32 bytes read as they are. Throws IoError when a source
// cannot be read, std::runtime_error when GGUF rows cannot be put back in order.
PairResult compare_pair(DiffSide& a, DiffSide& b, const TensorPair& pair,
                        const std::function<void(std::uint64_t)>& progressed);

}  // namespace tensorfs::compare
