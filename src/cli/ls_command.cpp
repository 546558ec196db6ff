// `tensorfs ls SOURCE [--json]`: the tensors of a model, one per line, or their meta.json documents. With --files:
// the side files and source/ instead (ls_files_command.cpp).
#include <cstdio>

#include "arguments.hpp"
#include "commands.hpp"
#include "model_choice.hpp"
#include "source_hints.hpp"
#include "tensorfs/json_files.hpp"
#include "tensorfs/engine.hpp"
#include "tensorfs/remote_source.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {

int ls_command(const Arguments& args) {
    const SplitArguments split = split_arguments(args, {"--json", "--files"}, kSourceFlags);
    if (!split.error.empty()) return usage_error(split.error);
    Settings settings;
    if (const std::string error = take_source_flags(split, settings); !error.empty()) return usage_error(error);
    if (const std::string problem = positional_problem("ls", split.positional, {"SOURCE"}); !problem.empty()) {
        return usage_error(problem);
    }
    if (split.has("--files")) return ls_files(split.positional[0], settings, split.has("--json"));
    const std::string described = source_to_describe(split.positional[0]);
    const Engine engine(described, settings);
    if (!engine.candidates().empty()) {
        // A folder of several models has no tensors (a mount of it shows none): --json gets the empty list.
        if (!split.has("--json")) return list_models(described, engine);
        std::fputs("[]\n", stdout);
        std::fprintf(stderr, "tensorfs: note: %s holds %zu models, so it has no tensors of its own; tensorfs ls "
                             "without --json lists them\n",
                     shown_source(described).c_str(), engine.candidates().size());
        return 0;
    }
    const Catalog& catalog = engine.catalog();

    if (split.has("--json")) {
        auto tensors = nlohmann::ordered_json::array();
        for (std::uint32_t i = 0; i < catalog.tensors.size(); ++i) tensors.push_back(tensor_meta(catalog, i));
        std::fputs(render_json_file(tensors).c_str(), stdout);
        return 0;
    }
    Table table({Align::Left, Align::Left, Align::Left, Align::Right});
    table.add_row({"NAME", "DTYPE", "SHAPE", "SIZE"});
    for (const Tensor& tensor : catalog.tensors) {
        const std::string_view dtype = tensor.quantization ? quantized_dtype(*tensor.quantization) : tensor.type->name;
        table.add_row({visible(tensor.name), std::string(dtype), shape_text(tensor.shape),
                       human_size(tensor.nbytes)});
    }
    std::fputs(table.render().c_str(), stdout);
    return 0;
}

}  // namespace tensorfs::cli
