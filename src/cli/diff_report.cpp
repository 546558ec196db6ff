#include "diff_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t kWorstShown = 10;

struct Summary {
    std::uint64_t paired = 0, identical = 0, different = 0, shape_mismatch = 0, only_in_a = 0, only_in_b = 0;
    DiffSums total;   // every compared pair's sums: element-weighted figures
    std::vector<const PairResult*> worst;   // by relative RMSE, the largest first
};

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

// The shortest text that reads back as the same double; "inf", "-inf"; "" for undefined (NaN).
std::string number_text(double value) {
    if (std::isnan(value)) return "";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char text[32];
    for (int digits = 6; digits <= 17; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, value);
        if (std::strtod(text, nullptr) == value) break;
    }
    return text;
}

// JSON has no infinities: they are the strings "inf" and "-inf"; an undefined figure is null.
Json json_number(double value) {
    if (std::isnan(value)) return nullptr;
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    return value;
}

Json json_shape(const std::vector<std::uint64_t>& shape) { return Json(shape); }

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
    std::string quoted = "\"";
    for (const char c : text) {
        if (c == '"') quoted += '"';
        quoted += c;
    }
    return quoted + "\"";
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

void print_json_lines(const DiffReport& report, const Summary& summary) {
    for (const PairResult& result : report.results) {
        std::printf("%s\n", pair_json(report, result).dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
    }
    std::printf("%s\n", summary_json(report, summary).dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
}

constexpr const char* kCsvColumns[] = {"status", "a", "b", "dtype_a", "dtype_b", "shape_a", "shape_b",
                                       "elements", "bytes_identical", "differing", "compared", "nan_a", "nan_b",
                                       "inf_a", "inf_b", "max_abs_diff", "rmse", "relative_rmse", "cosine",
                                       "snr_db"};

void print_csv(const DiffReport& report) {
    std::string header;
    for (const char* column : kCsvColumns) {
        if (!header.empty()) header += ',';
        header += column;
    }
    std::printf("%s\n", header.c_str());
    for (const PairResult& result : report.results) {
        const Json line = pair_json(report, result);
        std::string row;
        for (const char* column : kCsvColumns) {
            const auto found = line.find(column);
            std::string cell;
            if (found == line.end() || found->is_null()) {
                cell = "";
            } else if (found->is_string()) {
                cell = found->get<std::string>();
            } else if (found->is_array()) {
                cell = found->dump();
            } else if (found->is_number_float()) {
                cell = number_text(found->get<double>());
            } else {
                cell = found->dump();
            }
            if (!row.empty()) row += ',';
            row += csv_field(cell);
        }
        std::printf("%s\n", row.c_str());
    }
}

std::string figure(double value) {
    if (std::isnan(value)) return "-";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", value);
    return text;
}

// A cosine with enough digits to tell it from 1 (or -1): 0.9999986 is "0.999999", not "1".
std::string cosine_figure(double value) {
    if (std::isnan(value) || std::fabs(value) == 1) return figure(value);
    char text[32];
    for (int digits = 4; digits <= 17; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, value);
        if (std::fabs(std::strtod(text, nullptr)) != 1) break;
    }
    return text;
}

std::string name_of(const Tensor* tensor) { return tensor ? visible(tensor->name) : "-"; }

void print_table(const DiffReport& report, const Summary& summary, bool quiet) {
    if (!quiet) {
        Table table({Align::Left, Align::Left, Align::Left, Align::Left, Align::Right, Align::Right, Align::Right,
                     Align::Right, Align::Right, Align::Right});
        table.add_row({"STATUS", "A", "B", "DTYPES", "DIFFERING", "MAX|A-B|", "REL_RMSE", "COSINE", "SNR_DB",
                       "NAN/INF"});
        for (const PairResult& result : report.results) {
            const Tensor* a = tensor_a(report, result);
            const Tensor* b = tensor_b(report, result);
            std::vector<std::string> row{status_name(result.status), name_of(a),
                                         a && b && a->name == b->name ? "=" : name_of(b)};
            row.push_back(a && b ? std::string(a->type->name) + "/" + std::string(b->type->name)
                                 : std::string(a ? a->type->name : b->type->name));
            if (result.status == PairStatus::ShapeMismatch) {
                row.push_back(shape_text(a->shape) + " vs " + shape_text(b->shape));
            } else if (result.values_compared) {
                const DiffMetrics metrics = metrics_of(result.sums);
                const DiffSums& sums = result.sums;
                row.insert(row.end(), {std::to_string(sums.differing), figure(sums.max_abs_diff),
                                       figure(metrics.relative_rmse), cosine_figure(metrics.cosine),
                                       figure(metrics.snr_db),
                                       std::to_string(sums.nan_a + sums.inf_a) + "/" +
                                           std::to_string(sums.nan_b + sums.inf_b)});
            }
            row.resize(10);
            table.add_row(std::move(row));
        }
        std::fputs(table.render().c_str(), stdout);
        std::fputc('\n', stdout);
    }
    const DiffMetrics total = metrics_of(summary.total);
    std::printf("paired %llu: %llu identical, %llu different, %llu shape mismatches; only in A: %llu, "
                "only in B: %llu\n",
                static_cast<unsigned long long>(summary.paired), static_cast<unsigned long long>(summary.identical),
                static_cast<unsigned long long>(summary.different),
                static_cast<unsigned long long>(summary.shape_mismatch),
                static_cast<unsigned long long>(summary.only_in_a), static_cast<unsigned long long>(summary.only_in_b));
    if (summary.paired == 0 && summary.only_in_a + summary.only_in_b > 0) {
        std::printf("nothing paired: %s\n",
                    report.names == NameMode::Gguf
                        ? "no tensor of A has its GGUF name in B (--names same pairs the names as they are)"
                        : "A and B have no tensor name in common (--names gguf pairs a Hugging Face checkpoint's "
                          "names with its GGUF's)");
    }
    if (summary.total.compared > 0) {
        std::printf("over %s values: RMSE %s, SNR %s dB\n", short_count(summary.total.compared).c_str(),
                    figure(total.rmse).c_str(), figure(total.snr_db).c_str());
    }
    if (summary.worst.empty()) return;
    std::printf("worst by relative RMSE:\n");
    for (const PairResult* result : summary.worst) {
        std::printf("  %-10s %s\n", figure(relative_rmse(*result)).c_str(), name_of(tensor_a(report, *result)).c_str());
    }
}

}  // namespace

void print_report(const DiffReport& report, DiffFormat format, bool quiet) {
    const Summary summary = summarize(report);
    switch (format) {
        case DiffFormat::Json: print_json_lines(report, summary); break;
        case DiffFormat::Csv: print_csv(report); break;
        case DiffFormat::Table: print_table(report, summary, quiet); break;
    }
}

int exit_status_of(const DiffReport& report) {
    const bool all_identical = std::all_of(report.results.begin(), report.results.end(), [](const PairResult& result) {
        return result.status == PairStatus::Identical;
    });
    return all_identical ? 0 : 1;
}

}  // namespace tensorfs::cli
