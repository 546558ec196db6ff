#include "tensorfs/source_files.hpp"

namespace tensorfs {

SourceFiles::SourceFiles(const Catalog& catalog, const ModelFolder* folder) {
    for (const auto& file : catalog.files) files_.push_back(file.object.get());
    first_side_file_ = static_cast<std::uint32_t>(files_.size());
    unopened_.assign(files_.size(), false);
    if (folder != nullptr) {
        for (const auto& file : folder->side_files) {
            files_.push_back(file.object.get());
            unopened_.push_back(!file.problem.empty());
        }
    }
    first_source_file_ = static_cast<std::uint32_t>(files_.size());
    if (folder != nullptr) {
        for (const auto& file : folder->source_files) {
            files_.push_back(file.object.get());
            unopened_.push_back(!file.problem.empty());
        }
    }
}

}  // namespace tensorfs
