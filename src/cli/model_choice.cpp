#include "model_choice.hpp"

#include <cstdio>

#include "tensorfs/engine.hpp"
#include "tensorfs/remote_source.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {

int list_models(const std::string& source, const Engine& engine) {
    const std::vector<ModelCandidate>& models = engine.candidates();
    std::printf("%s holds %zu models, so it has no tensors of its own; pick one with %s, or name its file as SOURCE:\n",
                visible(shown_source(source)).c_str(), models.size(), std::string(kModelFlag).c_str());
    Table table({Align::Left, Align::Left, Align::Right});
    table.add_row({"PATH", "FORMAT", "FILES"});
    for (const auto& model : models) {
        table.add_row({visible(model.path), model.format, std::to_string(model.files.size())});
    }
    std::fputs(table.render().c_str(), stdout);
    return 0;
}

}  // namespace tensorfs::cli
