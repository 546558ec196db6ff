// A model given as files: one file, or every file of a format in a folder (transformers and diffusers shard names
// such as model-00001-of-00003.safetensors need nothing special: they are files).
#include "model_files.hpp"

#include "catalog_assembly.hpp"
#include "shards.hpp"

namespace tensorfs {

Catalog open_model_files(const SourceFolder& folder, const std::vector<std::string>& names, const std::string& format,
                         const FileReader& reader) {
    Problems problems;
    CatalogAssembly assembly(format, problems);
    for (auto& shard : read_shards(folder, names, reader)) {
        // A file that could not be opened has its own problem already (a server error, a refused token).
        if (shard.file == nullptr && shard.problems.empty()) {
            problems.add_missing(folder.name_of(shard.name), folder.missing(shard.name));
        }
        problems.add_all(std::move(shard.problems));
        if (shard.contents) {
            const std::uint64_t size = shard.contents->file_size;
            assembly.add_file(SourceFile{shard.file->name(), shard.name, size, shard.file}, std::move(*shard.contents));
        }
    }
    problems.throw_if_any();
    return assembly.take();
}

}  // namespace tensorfs
