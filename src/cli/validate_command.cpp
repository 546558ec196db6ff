// `tensorfs validate SOURCE [--json]`: every header rule checked, every problem printed, nothing mounted.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "arguments.hpp"
#include "commands.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/tree.hpp"

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

}  // namespace

int validate_command(const Arguments& args) {
    const SplitArguments split = split_arguments(args, {"--json"}, kSourceFlags);
    if (!split.error.empty()) return usage_error(split.error);
    if (const std::string problem = positional_problem("validate", split.positional, {"SOURCE"}); !problem.empty()) {
        return usage_error(problem);
    }
    SourceOptions options;
    if (const std::string error = take_source_flags(split, options); !error.empty()) return usage_error(error);
    std::string model;
    if (const std::string error = take_model_flag(split, model); !error.empty()) return usage_error(error);
    const std::string& source = split.positional[0];
    const bool json = split.has("--json");
    try {
        const Catalog catalog = chosen_model(source, model, options);
        const Tree tree(catalog);  // names that cannot become directories are problems too
        if (json) {
            print_json(source, &catalog, {});
        } else {
            std::printf("%s: valid %s, %zu tensors in %zu file(s)\n", source.c_str(), catalog.format.c_str(),
                        catalog.tensors.size(), catalog.files.size());
        }
        return 0;
    } catch (const InvalidSource& invalid) {
        if (json) {
            print_json(source, nullptr, invalid.problems());
        } else {
            for (const auto& problem : invalid.problems()) std::fprintf(stderr, "%s\n", problem.line().c_str());
        }
        return 1;
    }
}

}  // namespace tensorfs::cli
