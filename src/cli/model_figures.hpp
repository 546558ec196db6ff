// What `tensorfs info` computes from a catalog: parameter count, stored size, bits per weight, dtype mix.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensorfs/catalog.hpp"

namespace tensorfs::cli {

struct DtypeFigures {
    std::string_view dtype;
    std::uint64_t tensors = 0;
    std::uint64_t parameters = 0;
    std::uint64_t nbytes = 0;
};

struct ModelFigures {
    std::uint64_t parameters = 0;             // elements of every tensor
    std::uint64_t nbytes = 0;                 // stored bytes of every tensor
    std::optional<double> bits_per_weight;    // 8 * nbytes / parameters; none without parameters
    std::vector<DtypeFigures> dtypes;         // most parameters first
};

ModelFigures model_figures(const Catalog& catalog);

// The figures as keys to add to model.json's content: parameter_count, bits_per_weight, dtypes.
nlohmann::ordered_json figures_json(const ModelFigures& figures);

}  // namespace tensorfs::cli
