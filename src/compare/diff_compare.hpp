// The comparison of one pair of `tensorfs diff`: both tensors' float32 values streamed in step through a
// DequantReader each (the decoded chunks of a mount, decoded ahead by its workers on every core, within the cache
// budget), their sums accumulated chunk by chunk straight from the chunks, so that memory stays bounded whatever the
// tensors' sizes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "diff_metrics.hpp"
#include "diff_pairs.hpp"
#include "tensorfs/dequant_reader.hpp"
#include "tensorfs/engine.hpp"

namespace tensorfs::compare {

// One side of a diff: its SOURCE, parsed, and read as a mount would.
struct DiffSide {
    // Throws SourceError as `tensorfs cat SOURCE` would (settings.model picks one model of a folder of several;
    // `pick` says how, in the front end's words). `decoded_budget`: the side's share of the memory for decoded
    // values.
    DiffSide(const std::string& source, const Settings& settings, std::uint64_t decoded_budget, std::string_view pick)
        : path(source), engine(source, settings, needs(decoded_budget)) {
        engine.require_model(pick);
    }

    const Catalog& catalog() const { return engine.catalog(); }
    const SourceFiles& files() const { return engine.files(); }
    // The float32 values, as dequant.f32 holds them.
    DequantReader& values() const { return engine.content().values(); }

    std::string path;
    Engine engine;

private:
    static EngineNeeds needs(std::uint64_t decoded_budget) {
        EngineNeeds needs;
        needs.decoded_budget = decoded_budget;
        return needs;
    }
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
