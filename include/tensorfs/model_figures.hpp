// What `tensorfs info` (and Python's tensorfs.info) computes from a catalog: parameter count, stored size, bits per
// weight, dtype mix; and the document `tensorfs info --json` prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensorfs/catalog.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs {

struct DtypeFigures {
    std::string_view dtype;
    std::uint64_t tensors = 0;
    std::uint64_t parameters = 0;
    std::uint64_t nbytes = 0;
};

// A quantized weight counts as one tensor of its scheme's dtype ("GPTQ-INT4"), with its logical elements as its
// parameters and the bytes of all its parts; its other parts (scales, zero points...) count for nothing more.
struct ModelFigures {
    std::uint64_t parameters = 0;             // elements of every tensor but the parts of quantized weights
    std::uint64_t nbytes = 0;                 // stored bytes of every tensor
    std::optional<double> bits_per_weight;    // 8 * nbytes / parameters; none without parameters
    std::vector<DtypeFigures> dtypes;         // most parameters first
};

// 8 * nbytes / parameters.
double bits_per_weight(std::uint64_t nbytes, std::uint64_t parameters);

ModelFigures model_figures(const Catalog& catalog);

// A model.json document's keys with the figures inserted after "total_nbytes".
nlohmann::ordered_json with_figures(const nlohmann::ordered_json& model, const ModelFigures& figures);

// model.json (as a mount with the default options shows it) with the figures.
nlohmann::ordered_json info_json(const Catalog& catalog, const Tree& tree, const ModelFigures& figures);

}  // namespace tensorfs
