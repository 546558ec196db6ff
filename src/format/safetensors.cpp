// A safetensors model given as files: one file, or every *.safetensors of a folder (transformers and
// diffusers shard names such as model-00001-of-00003.safetensors need nothing special: they are files).
#include "formats.hpp"
#include "safetensors_assembly.hpp"
#include "safetensors_shards.hpp"

namespace tensorfs {

Catalog open_safetensors_files(const SourceFolder& folder, const std::vector<std::string>& names) {
    Problems problems;
    safetensors::CatalogAssembly assembly(problems);
    for (auto& shard : safetensors::read_shard_headers(folder, names)) {
        // A file that could not be opened has its own problem already (a server error, a refused token).
        if (shard.file == nullptr && shard.problems.empty()) {
            problems.add(folder.name_of(shard.name), folder.missing(shard.name));
        }
        problems.add_all(std::move(shard.problems));
        if (shard.header) {
            const std::uint64_t size = shard.header->file_size;
            assembly.add_file(SourceFile{shard.file->name(), shard.name, size, shard.file}, std::move(*shard.header));
        }
    }
    problems.throw_if_any();
    return assembly.take();
}

}  // namespace tensorfs
