#include "catalog_assembly.hpp"

#include "safetensors_json.hpp"

namespace tensorfs {

CatalogAssembly::CatalogAssembly(std::string format, Problems& problems) : problems_(problems) {
    catalog_.format = std::move(format);
}

void CatalogAssembly::add_file(SourceFile file, FileContents contents) {
    const auto index = static_cast<std::uint32_t>(catalog_.files.size());
    for (auto& tensor : contents.tensors) {
        const auto [found, added] = file_of_tensor_.emplace(tensor.name, index);
        if (!added) {
            problems_.add(file.path, "tensor " + safetensors::json_quoted(tensor.name) + " is in both " +
                                         catalog_.files[found->second].display + " and " + file.display);
            continue;
        }
        tensor.file = index;
        catalog_.tensors.push_back(std::move(tensor));
    }
    add_metadata(contents.metadata);
    catalog_.files.push_back(std::move(file));
}

void CatalogAssembly::add_metadata(const nlohmann::ordered_json& metadata) {
    for (const auto& [key, value] : metadata.items()) {
        if (metadata_keys_.insert(key).second) append_new_key(catalog_.metadata, key, value);
    }
}

std::optional<std::uint32_t> CatalogAssembly::file_of(const std::string& name) const {
    const auto found = file_of_tensor_.find(name);
    if (found == file_of_tensor_.end()) return std::nullopt;
    return found->second;
}

}  // namespace tensorfs
