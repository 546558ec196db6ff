// The rows of `tensorfs diff --json` (and of Python's tensorfs.diff): one JSON object per pair of tensors, then the
// summary of the whole comparison. The README documents their keys.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "diff_compare.hpp"

namespace tensorfs::compare {

struct DiffReport {
    const DiffSide& a;
    const DiffSide& b;
    NameMode names;
    std::vector<PairResult> results;
};

struct Summary {
    std::uint64_t paired = 0, identical = 0, different = 0, shape_mismatch = 0, only_in_a = 0, only_in_b = 0;
    DiffSums total;   // every compared pair's sums: element-weighted figures
    std::vector<const PairResult*> worst;   // by relative RMSE, the largest first
};

Summary summarize(const DiffReport& report);

// "identical", "different", "shape_mismatch", "only_in_a", "only_in_b".
const char* status_name(PairStatus status);

double relative_rmse(const PairResult& result);

// The pair's tensor in A and in B; nullptr for the side it is missing from.
const Tensor* tensor_a(const DiffReport& report, const PairResult& result);
const Tensor* tensor_b(const DiffReport& report, const PairResult& result);

nlohmann::ordered_json pair_json(const DiffReport& report, const PairResult& result);
nlohmann::ordered_json summary_json(const DiffReport& report, const Summary& summary);

}  // namespace tensorfs::compare
