#include "diff.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "compare/diff_compare.hpp"
#include "compare/diff_pairs.hpp"
#include "compare/diff_rows.hpp"
#include "interruptible.hpp"
#include "python_values.hpp"
#include "read_settings.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

compare::NameMode name_mode(const std::string& names) {
    if (names == "same") return compare::NameMode::Same;
    if (names == "gguf") return compare::NameMode::Gguf;
    if (names == "auto") return compare::NameMode::Auto;
    throw py::value_error("names must be 'same', 'gguf' or 'auto', not '" + names + "'");
}

// Both sides opened, paired and compared: made by the work of one call, which may outlive it.
struct Comparison {
    std::unique_ptr<compare::DiffSide> a;
    std::unique_ptr<compare::DiffSide> b;
    compare::Pairing pairing;
    std::vector<compare::PairResult> results;
};

// A figure of a row as a float: JSON has no infinities ("inf", "-inf" in the command's JSON) and gives an
// undefined one as null (nan here).
py::float_ figure(const py::handle& value) {
    if (value.is_none()) return py::float_(std::numeric_limits<double>::quiet_NaN());
    return py::float_(py::module_::import("builtins").attr("float")(value));
}

void figures_as_floats(py::dict row) {
    for (const char* key : {"max_abs_diff", "rmse", "relative_rmse", "cosine", "snr_db"}) {
        if (row.contains(key)) row[key] = figure(row[key]);
    }
    if (row.contains("worst")) {
        for (const py::handle worst : row["worst"]) figures_as_floats(py::reinterpret_borrow<py::dict>(worst));
    }
}

}  // namespace

py::list diff(const py::handle& a, const py::handle& b, const std::string& names, const py::handle& tensors,
              const py::kwargs& options) {
    const compare::NameMode mode = name_mode(names);
    const std::string glob = tensors.is_none() ? std::string() : name_from_python(tensors);
    const Settings settings = read_settings(options, "diff");
    const std::string path_a = source_text(a), path_b = source_text(b);
    auto comparison = std::make_shared<Comparison>();
    run_interruptibly([=](const std::atomic<bool>& stop) {
        // As the command does: each side keeps half of the cache budget in decoded chunks.
        // model=PATH picks the same model path in both, as `tensorfs diff --model PATH` does.
        const std::uint64_t half = settings.decoded_budget(false) / 2;
        comparison->a = std::make_unique<compare::DiffSide>(path_a, settings, half, "model=PATH");
        comparison->b = std::make_unique<compare::DiffSide>(path_b, settings, half, "model=PATH");
        comparison->pairing = compare::pair_tensors(comparison->a->catalog(), comparison->b->catalog(), mode, glob);
        for (const compare::TensorPair& pair : comparison->pairing.pairs) {
            if (stop) return;
            comparison->results.push_back(
                compare::compare_pair(*comparison->a, *comparison->b, pair, [](std::uint64_t) {}));
        }
    });
    if (!glob.empty() && comparison->pairing.pairs.empty()) {
        // As load() says it of one source.
        throw py::key_error("no tensor of " + path_a + " or " + path_b + " matches tensors=" + glob);
    }
    const compare::DiffReport report{*comparison->a, *comparison->b, comparison->pairing.mode, comparison->results};
    py::list rows;
    for (const compare::PairResult& result : report.results) {
        py::dict row = json_to_python(pair_json(report, result));
        figures_as_floats(row);
        rows.append(row);
    }
    py::dict summary = json_to_python(summary_json(report, summarize(report)));
    figures_as_floats(summary);
    rows.append(summary);
    return rows;
}

}  // namespace tensorfs::python
