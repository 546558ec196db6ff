// `tensorfs validate SOURCE [--json]`: every header rule checked, every problem printed, nothing mounted.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "arguments.hpp"
#include "commands.hpp"
#include "model_choice.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/engine.hpp"
#include "tensorfs/quantized_values.hpp"

namespace tensorfs::cli {
namespace {

using Json = nlohmann::ordered_json;

// {"source", "valid", "format", "tensors", "files", "problems": [{"file", "what", "at_byte"}]}, on stdout.
void print_json(const std::string& source, const Catalog* catalog, const std::vector<Problem>& problems) {
    Json document = {{"source", source}, {"valid", catalog != nullptr}};
    document["format"] = catalog ? Json(catalog->format) : Json(nullptr);
    document["tensors"] = catalog ? Json(catalog->tensors.size()) : Json(nullptr);
    document["files"] = catalog ? Json(catalog->files.size()) : Json(nullptr);
    document["problems"] = Json::array();
    for (const Problem& problem : problems) {
        document["problems"].push_back({{"file", problem.file},
                                        {"what", problem.what},
                                        {"at_byte", problem.at_byte ? Json(*problem.at_byte) : Json(nullptr)},
                                        {"line", problem.line()}});
    }
    // Bytes a broken file gave as names need not be UTF-8: replaced, never a thrown error.
    std::fputs((document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n").c_str(), stdout);
}

// The quantized weights whose values cannot be made, and what else keeps the model's quantization from being what
// its config says: the mount serves everything else, but the model is not valid.
std::vector<Problem> quantization_problems(const Engine& engine) {
    std::vector<Problem> problems;
    const Catalog& catalog = engine.catalog();
    for (const Tensor& tensor : catalog.tensors) {
        if (!tensor.quantization) continue;
        std::string what =
            tensor.has_values() ? quantized_values_problem(engine.files(), tensor) : why_no_values(tensor);
        if (what.empty()) continue;
        problems.push_back(Problem{catalog.files[tensor.file].display, "tensor " + tensor.name + ": " + what, {}});
    }
    for (const std::string& what : catalog.quantization_problems) {
        problems.push_back(Problem{catalog.files.empty() ? "" : catalog.files.front().display, what, {}});
    }
    return problems;
}

}  // namespace

int validate_command(const Arguments& args) {
    const SplitArguments split = split_arguments(args, {"--json"}, kSourceFlags);
    if (!split.error.empty()) return usage_error(split.error);
    if (const std::string problem = positional_problem("validate", split.positional, {"SOURCE"}); !problem.empty()) {
        return usage_error(problem);
    }
    Settings settings;
    if (const std::string error = take_source_flags(split, settings); !error.empty()) return usage_error(error);
    const std::string& source = split.positional[0];
    const bool json = split.has("--json");
    try {
        // The tree the engine makes refuses names that cannot become directories: problems too.
        const Engine engine(source, settings);
        engine.require_model(kModelFlag);
        const Catalog& catalog = engine.catalog();
        if (std::vector<Problem> problems = quantization_problems(engine); !problems.empty()) {
            throw SourceError(std::move(problems));
        }
        if (json) {
            print_json(source, &catalog, {});
        } else {
            std::printf("%s: valid %s, %zu tensors in %zu file(s)\n", source.c_str(), catalog.format.c_str(),
                        catalog.tensors.size(), catalog.files.size());
        }
        return 0;
    } catch (const SourceError& invalid) {
        if (json) {
            print_json(source, nullptr, invalid.problems());
        } else {
            for (const auto& problem : invalid.problems()) std::fprintf(stderr, "%s\n", problem.line().c_str());
        }
        return 1;
    }
}

}  // namespace tensorfs::cli
