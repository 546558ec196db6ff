// safetensors models: one file, the *.safetensors of a folder, or a *.safetensors.index.json and its shards.
#include "formats.hpp"
#include "model_files.hpp"
#include "safetensors_header.hpp"

namespace tensorfs {

Catalog open_safetensors_files(const SourceFolder& folder, const std::vector<std::string>& names) {
    return open_model_files(folder, names, "safetensors", safetensors::read_header);
}

Catalog open_safetensors_index(const SourceFolder& folder, const std::string& index_name) {
    return open_model_index(folder, index_name, "safetensors", safetensors::read_header);
}

}  // namespace tensorfs
