// open_gguf: one GGUF file, or every part of the split set it belongs to, as one Catalog.
//
// A split model's metadata is its first part's, kept whole: split.no, split.count and split.tensors.count stay,
// as in the file llama.cpp's `gguf-split --merge` writes, so model.json shows that the model came in parts.
// The other parts carry only their split keys (anything else they carry is not shown).
#include <filesystem>
#include <unordered_map>

#include "formats.hpp"
#include "gguf_file.hpp"
#include "gguf_reader.hpp"
#include "gguf_split.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs {
namespace fs = std::filesystem;

namespace {

// The parts in order as one Catalog; a tensor name found in two parts is refused, naming both.
Catalog assemble(std::vector<gguf::GgufFile> parts) {
    Catalog catalog;
    catalog.format = "gguf";
    catalog.metadata = std::move(parts.front().metadata.values);
    catalog.metadata_types = std::move(parts.front().metadata.types);
    Problems problems;
    std::unordered_map<std::string, std::uint32_t> file_of_name;
    for (std::uint32_t index = 0; index < parts.size(); ++index) {
        auto& part = parts[index];
        catalog.files.push_back(SourceFile{part.path, fs::path(part.path).filename().string(), part.size});
        for (auto& tensor : part.tensors) {
            if (const auto [seen, added] = file_of_name.emplace(tensor.name, index); !added) {
                problems.add(part.path, "tensor " + gguf::in_quotes(tensor.name) + " is also in " +
                                            parts[seen->second].path);
                continue;
            }
            tensor.file = index;
            catalog.tensors.push_back(std::move(tensor));
        }
    }
    problems.throw_if_any();
    return catalog;
}

}  // namespace

Catalog open_gguf(const fs::path& file) {
    gguf::GgufFile given = gguf::read_gguf_file(file.string());
    std::vector<gguf::GgufFile> parts;
    if (gguf::is_split_part(given, given.path)) {
        parts = gguf::read_split_parts(std::move(given), file);
    } else {
        parts.push_back(std::move(given));
    }
    return assemble(std::move(parts));
}

}  // namespace tensorfs
