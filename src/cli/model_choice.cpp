#include "model_choice.hpp"

#include <cstdio>

#include "tensorfs/open_source.hpp"
#include "tensorfs/remote_source.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {
int list_models(const std::string& source, const std::vector<ModelCandidate>& models) {
    std::printf("%s holds %zu models, so it has no tensors of its own; %s:\n", visible(shown_source(source)).c_str(),
                models.size(), kHowToPickAModel);
    Table table({Align::Left, Align::Left, Align::Right});
    table.add_row({"PATH", "FORMAT", "FILES"});
    for (const auto& model : models) {
        table.add_row({visible(model.path), model.format, std::to_string(model.files.size())});
    }
    std::fputs(table.render().c_str(), stdout);
    return 0;
}

}  // namespace tensorfs::cli
