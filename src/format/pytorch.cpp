// PyTorch models: one checkpoint file, the *.bin / *.pt / *.pth files of a folder, or a *.bin.index.json
// (pytorch_model.bin.index.json) and its shards.
#include "formats.hpp"
#include "model_files.hpp"
#include "pytorch_file.hpp"

namespace tensorfs {

Catalog open_pytorch_files(const SourceFolder& folder, const std::vector<std::string>& names) {
    return open_model_files(folder, names, "pytorch", pytorch::read_pytorch_file);
}

Catalog open_pytorch_index(const SourceFolder& folder, const std::string& index_name) {
    return open_model_index(folder, index_name, "pytorch", pytorch::read_pytorch_file);
}

}  // namespace tensorfs
