#include "tensorfs/source_files.hpp"

namespace tensorfs {

SourceFiles::SourceFiles(const Catalog& catalog, const ModelFolder* folder) {
    for (const auto& file : catalog.files) files_.push_back(file.object.get());
    first_side_file_ = static_cast<std::uint32_t>(files_.size());
    if (folder != nullptr) {
        for (const auto& file : folder->side_files) files_.push_back(file.object.get());
    }
    first_source_file_ = static_cast<std::uint32_t>(files_.size());
    if (folder != nullptr) {
        for (const auto& file : folder->source_files) files_.push_back(file.object.get());
    }
}

}  // namespace tensorfs
