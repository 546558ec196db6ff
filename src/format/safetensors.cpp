// safetensors models: one file, the *.safetensors of a folder, or a *.safetensors.index.json and its shards.
#include "formats.hpp"
#include "model_files.hpp"
#include "safetensors_header.hpp"

namespace tensorfs {
namespace {

std::optional<FileContents> read_safetensors_file(const SourceObject& file, unsigned, Problems& problems) {
    return safetensors::read_header(file, problems);
}

}  // namespace

Catalog open_safetensors_files(const SourceFolder& folder, const std::vector<std::string>& names) {
    return open_model_files(folder, names, "safetensors", read_safetensors_file);
}

Catalog open_safetensors_index(const SourceFolder& folder, const std::string& index_name) {
    return open_model_index(folder, index_name, "safetensors", read_safetensors_file);
}

}  // namespace tensorfs
