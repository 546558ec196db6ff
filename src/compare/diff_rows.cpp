#include "diff_rows.hpp"

#include <algorithm>
#include <cmath>

namespace tensorfs::compare {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t kWorstShown = 10;

// JSON has no infinities: they are the strings "inf" and "-inf"; an undefined figure is null.
Json json_number(double value) {
    if (std::isnan(value)) return nullptr;
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    return value;
}

Json json_shape(const std::vector<std::uint64_t>& shape) { return Json(shape); }

}  // namespace

double relative_rmse(const PairResult& result) { return metrics_of(result.sums).relative_rmse; }

Summary summarize(const DiffReport& report) {
    Summary summary;
    std::vector<const PairResult*> differing;
    for (const PairResult& result : report.results) {
        switch (result.status) {
            case PairStatus::OnlyInA: ++summary.only_in_a; continue;
            case PairStatus::OnlyInB: ++summary.only_in_b; continue;
            case PairStatus::ShapeMismatch: ++summary.shape_mismatch; break;
            case PairStatus::Identical: ++summary.identical; break;
            case PairStatus::Different: ++summary.different; break;
        }
        ++summary.paired;
        if (!result.values_compared) continue;
        summary.total.merge(result.sums);
        if (result.status == PairStatus::Different) differing.push_back(&result);
    }
    std::stable_sort(differing.begin(), differing.end(), [](const PairResult* x, const PairResult* y) {
        return relative_rmse(*x) > relative_rmse(*y);
    });
    differing.resize(std::min(differing.size(), kWorstShown));
    summary.worst = std::move(differing);
    return summary;
}

const char* status_name(PairStatus status) {
    switch (status) {
        case PairStatus::Identical: return "identical";
        case PairStatus::Different: return "different";
        case PairStatus::ShapeMismatch: return "shape_mismatch";
        case PairStatus::OnlyInA: return "only_in_a";
        case PairStatus::OnlyInB: return "only_in_b";
    }
    return "";
}

const Tensor* tensor_a(const DiffReport& report, const PairResult& result) {
    return result.pair.a ? &report.a.catalog().tensors[*result.pair.a] : nullptr;
}
const Tensor* tensor_b(const DiffReport& report, const PairResult& result) {
    return result.pair.b ? &report.b.catalog().tensors[*result.pair.b] : nullptr;
}

Json pair_json(const DiffReport& report, const PairResult& result) {
    const Tensor* a = tensor_a(report, result);
    const Tensor* b = tensor_b(report, result);
    Json line;
    line["kind"] = result.status == PairStatus::OnlyInA || result.status == PairStatus::OnlyInB ? "unpaired" : "pair";
    line["status"] = status_name(result.status);
    line["a"] = a ? Json(a->name) : Json(nullptr);
    line["b"] = b ? Json(b->name) : Json(nullptr);
    line["dtype_a"] = a ? Json(std::string(a->type->name)) : Json(nullptr);
    line["dtype_b"] = b ? Json(std::string(b->type->name)) : Json(nullptr);
    line["shape_a"] = a ? json_shape(a->shape) : Json(nullptr);
    line["shape_b"] = b ? json_shape(b->shape) : Json(nullptr);
    if (!a || !b) return line;
    line["elements"] = a->elements;
    line["bytes_identical"] = result.bytes_identical;
    line["unpermuted_heads"] = result.pair.permuted_heads;
    line["gguf_added"] = result.pair.added;
    line["values_compared"] = result.values_compared;
    if (!result.values_compared) return line;
    const DiffSums& sums = result.sums;
    const DiffMetrics metrics = metrics_of(sums);
    line["differing"] = sums.differing;
    line["compared"] = sums.compared;
    line["nan_a"] = sums.nan_a;
    line["nan_b"] = sums.nan_b;
    line["inf_a"] = sums.inf_a;
    line["inf_b"] = sums.inf_b;
    line["max_abs_diff"] = json_number(sums.max_abs_diff);
    line["rmse"] = json_number(metrics.rmse);
    line["relative_rmse"] = json_number(metrics.relative_rmse);
    line["cosine"] = json_number(metrics.cosine);
    line["snr_db"] = json_number(metrics.snr_db);
    return line;
}

Json summary_json(const DiffReport& report, const Summary& summary) {
    const DiffMetrics total = metrics_of(summary.total);
    Json line;
    line["kind"] = "summary";
    line["a"] = report.a.path;
    line["b"] = report.b.path;
    line["names"] = report.names == NameMode::Gguf ? "gguf" : "same";
    line["paired"] = summary.paired;
    line["identical"] = summary.identical;
    line["different"] = summary.different;
    line["shape_mismatch"] = summary.shape_mismatch;
    line["only_in_a"] = summary.only_in_a;
    line["only_in_b"] = summary.only_in_b;
    line["compared"] = summary.total.compared;
    // No figure over no values: null, not an RMSE of 0 that reads as a perfect match.
    const bool any_compared = summary.total.compared > 0;
    line["rmse"] = any_compared ? json_number(total.rmse) : Json(nullptr);
    line["snr_db"] = any_compared ? json_number(total.snr_db) : Json(nullptr);
    Json worst = Json::array();
    for (const PairResult* result : summary.worst) {
        worst.push_back({{"a", tensor_a(report, *result)->name}, {"b", tensor_b(report, *result)->name},
                         {"relative_rmse", json_number(relative_rmse(*result))}});
    }
    line["worst"] = std::move(worst);
    return line;
}

}  // namespace tensorfs::compare
