#include "model_choice.hpp"

#include <cstdio>

#include "tensorfs/errors.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/remote_source.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

constexpr const char* kHowToPick = "pick one with --model PATH (-o model=PATH for a mount), or name its file as SOURCE";

}  // namespace

Catalog chosen_model(const std::string& source, const std::string& model, const SourceOptions& options) {
    OpenedModel opened = open_model(source, model, options);
    if (!opened.catalog) {
        std::string paths;
        for (const auto& candidate : opened.models) paths += (paths.empty() ? "" : ", ") + candidate.path;
        Problems problems;
        problems.add(shown_source(source), "holds " + std::to_string(opened.models.size()) + " models (" + paths +
                                               "); " + kHowToPick);
        problems.throw_if_any();
    }
    return std::move(*opened.catalog);
}

int list_models(const std::string& source, const std::vector<ModelCandidate>& models) {
    std::printf("%s holds %zu models, so it has no tensors of its own; %s:\n", visible(shown_source(source)).c_str(),
                models.size(), kHowToPick);
    Table table({Align::Left, Align::Left, Align::Right});
    table.add_row({"PATH", "FORMAT", "FILES"});
    for (const auto& model : models) {
        table.add_row({visible(model.path), model.format, std::to_string(model.files.size())});
    }
    std::fputs(table.render().c_str(), stdout);
    return 0;
}

}  // namespace tensorfs::cli
