// `tensorfs info SOURCE [--json]`: what a model is made of, at a glance; or model.json plus the computed figures.
#include <cstdio>
#include <utility>

#include "arguments.hpp"
#include "commands.hpp"
#include "source_hints.hpp"
#include "metadata_text.hpp"
#include "model_choice.hpp"
#include "tensorfs/json_files.hpp"
#include "tensorfs/model_figures.hpp"
#include "tensorfs/engine.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

std::string summary_text(const Catalog& catalog, const ModelFigures& figures) {
    Table table({Align::Left, Align::Left});
    table.add_row({"format", catalog.format});
    for (std::size_t i = 0; i < catalog.files.size(); ++i) {
        const SourceFile& file = catalog.files[i];
        table.add_row({i == 0 ? "files" : "", visible(file.display) + " (" + human_size(file.size) + ")"});
    }
    table.add_row({"tensors", std::to_string(catalog.tensors.size())});
    std::string parameters = std::to_string(figures.parameters);
    if (figures.parameters >= 1000) parameters += " (" + short_count(figures.parameters) + ")";
    table.add_row({"parameters", parameters});
    table.add_row({"size", std::to_string(figures.nbytes) + " bytes (" + human_size(figures.nbytes) + ")"});
    char bits[32] = "-";
    if (figures.bits_per_weight) std::snprintf(bits, sizeof bits, "%.2f", *figures.bits_per_weight);
    table.add_row({"bits per weight", bits});
    const nlohmann::ordered_json quantization = quantization_summary(catalog);
    if (!quantization.is_null()) {
        std::string label = "quantization";
        for (const auto& scheme : quantization["schemes"]) {
            std::string line = scheme["scheme"].get<std::string>() + ", " + scheme["bits"].dump() + " bits";
            if (!scheme["group_size"].is_null()) line += ", groups of " + scheme["group_size"].dump();
            if (scheme.contains("block")) {
                line += ", blocks of " + scheme["block"][0].dump() + "x" + scheme["block"][1].dump();
            }
            line += " (" + scheme["weights"].dump() + " weights)";
            table.add_row({std::exchange(label, ""), line});
        }
        const std::size_t problems = quantization["problems"].size();
        if (problems > 0) {
            table.add_row({std::exchange(label, ""), std::to_string(problems) +
                                                         " weights cannot be decoded (tensorfs validate says why)"});
        }
    }
    return table.render();
}

std::string dtypes_text(const ModelFigures& figures) {
    Table table({Align::Left, Align::Right, Align::Right, Align::Right, Align::Right});
    table.add_row({"DTYPE", "TENSORS", "PARAMETERS", "SIZE", "BITS/WEIGHT"});
    for (const DtypeFigures& d : figures.dtypes) {
        char bits[32] = "-";
        if (d.parameters > 0) std::snprintf(bits, sizeof bits, "%.2f", bits_per_weight(d.nbytes, d.parameters));
        table.add_row({std::string(d.dtype), std::to_string(d.tensors), std::to_string(d.parameters),
                       human_size(d.nbytes), bits});
    }
    return table.render();
}

std::string metadata_text(const Catalog& catalog) {
    std::string text = "metadata (" + std::to_string(catalog.metadata.size()) + " keys)\n";
    // The empty first column indents the rows by the two spaces between columns.
    Table table({Align::Left, Align::Left, Align::Left});
    for (const auto& [key, value] : catalog.metadata.items()) {
        const auto type = catalog.metadata_types.find(key);
        const bool typed = type != catalog.metadata_types.end() && type->is_string();
        const std::string gguf_type = typed ? type->get<std::string>() : "";
        table.add_row({"", visible(key), metadata_value_text(value, gguf_type)});
    }
    return text + table.render();
}

}  // namespace

int info_command(const Arguments& args) {
    const SplitArguments split = split_arguments(args, {"--json"}, kSourceFlags);
    if (!split.error.empty()) return usage_error(split.error);
    Settings settings;
    if (const std::string error = take_source_flags(split, settings); !error.empty()) return usage_error(error);
    if (const std::string problem = positional_problem("info", split.positional, {"SOURCE"}); !problem.empty()) {
        return usage_error(problem);
    }
    const std::string described = source_to_describe(split.positional[0]);
    const Engine engine(described, settings);
    if (!engine.candidates().empty()) {
        if (!split.has("--json")) return list_models(described, engine);
        std::fputs(render_json_file(engine.info()).c_str(), stdout);
        return 0;
    }
    const ModelFigures figures = model_figures(engine.catalog());

    if (split.has("--json")) {
        std::fputs(render_json_file(engine.info()).c_str(), stdout);
        return 0;
    }
    const std::string text =
        summary_text(engine.catalog(), figures) + "\n" + dtypes_text(figures) + "\n" + metadata_text(engine.catalog());
    std::fputs(text.c_str(), stdout);
    return 0;
}

}  // namespace tensorfs::cli
