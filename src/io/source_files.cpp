#include "tensorfs/source_files.hpp"

namespace tensorfs {

SourceFiles::SourceFiles(const Catalog& catalog) {
    files_.reserve(catalog.files.size());
    for (const auto& file : catalog.files) files_.push_back(file.object.get());
}

}  // namespace tensorfs
