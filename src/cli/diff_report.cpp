#include "diff_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

using namespace compare;

using Json = nlohmann::ordered_json;

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

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
    std::string quoted = "\"";
    for (const char c : text) {
        if (c == '"') quoted += '"';
        quoted += c;
    }
    return quoted + "\"";
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
