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
// `names`: each part's name relative to the source's folder.
Catalog assemble(std::vector<gguf::GgufFile> parts, std::vector<std::string> names) {
    Catalog catalog;
    catalog.format = "gguf";
    catalog.metadata = std::move(parts.front().metadata.values);
    catalog.metadata_types = std::move(parts.front().metadata.types);
    Problems problems;
    std::unordered_map<std::string, std::uint32_t> file_of_name;
    for (std::uint32_t index = 0; index < parts.size(); ++index) {
        auto& part = parts[index];
        catalog.files.push_back(SourceFile{part.path, std::move(names[index]), part.size, std::move(part.object)});
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

Catalog open_gguf(const SourceFolder& folder, const std::string& name) {
    gguf::GgufFile given = gguf::read_gguf_file(folder.open(name));
    std::vector<gguf::GgufFile> parts;
    std::vector<std::string> names;
    if (gguf::is_split_part(given, given.path)) {
        parts = gguf::read_split_parts(std::move(given), folder, name);
        const auto split = gguf::parse_split_name(fs::path(name).filename().string());
        const fs::path folder_part = fs::path(name).parent_path();
        for (std::uint64_t part = 1; part <= parts.size(); ++part) {
            names.push_back((folder_part / gguf::split_file_name(split->prefix, part, parts.size())).generic_string());
        }
    } else {
        parts.push_back(std::move(given));
        names.push_back(name);
    }
    return assemble(std::move(parts), std::move(names));
}

}  // namespace tensorfs
