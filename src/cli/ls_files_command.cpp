// `tensorfs ls --files SOURCE [--json]`: what a mount's side files and source/ will hold, without a mount.
#include <cstdio>
#include <string>

#include "arguments.hpp"
#include "commands.hpp"
#include "tensorfs/json_files.hpp"
#include "tensorfs/engine.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {

int ls_files(const std::string& source, const Settings& settings, bool json) {
    EngineNeeds needs;
    needs.folder = true;
    const Engine engine(source, settings, needs);
    const ModelFolder& folder = engine.folder();
    if (json) {
        std::fputs(render_json_file(folder_files_json(folder)).c_str(), stdout);
        return 0;
    }
    // Paths as they appear under the mount point, side files first (ls's order within each part).
    Table table({Align::Left, Align::Right, Align::Right});
    table.add_row({"PATH", "SIZE", "BYTES"});
    const auto add = [&](const std::vector<FolderFile>& files, const std::string& prefix) {
        for (const auto& file : files) {
            table.add_row({visible(prefix + file.path), human_size(file.object->size()),
                           std::to_string(file.object->size())});
        }
    };
    add(folder.side_files, "");
    add(folder.source_files, "source/");
    std::fputs(table.render().c_str(), stdout);
    for (const FolderFile* file : unopened_files(folder)) {
        std::printf("%s: cannot be read (a mount shows it empty, reads fail): %s\n", visible(file->path).c_str(),
                    visible(file->problem).c_str());
    }
    if (!folder.models.empty()) {
        std::printf("\n%zu models in this folder (pick one with --model PATH, -o model=PATH for a mount):\n",
                    folder.models.size());
        for (const auto& model : folder.models) {
            std::printf("  %s (%s)\n", visible(model.path).c_str(), model.format.c_str());
        }
    }
    return 0;
}

}  // namespace tensorfs::cli
