#include "catalog_assembly.hpp"

#include "safetensors_json.hpp"

namespace tensorfs {

CatalogAssembly::CatalogAssembly(std::string format, Problems& problems)
    : problems_(problems), tensor_names_(0, HashByName{NameOf{&catalog_}}, SameName{NameOf{&catalog_}}) {
    catalog_.format = std::move(format);
}

void CatalogAssembly::add_file(SourceFile file, FileContents contents) {
    const auto index = static_cast<std::uint32_t>(catalog_.files.size());
    for (auto& tensor : contents.tensors) {
        tensor.file = index;
        catalog_.tensors.push_back(std::move(tensor));
        const auto [found, added] = tensor_names_.insert(static_cast<std::uint32_t>(catalog_.tensors.size() - 1));
        if (!added) {
            const Tensor& twin = catalog_.tensors.back();
            const SourceFile& first = catalog_.files[catalog_.tensors[*found].file];
            problems_.add(file.path, "tensor " + safetensors::json_quoted(twin.name) + " is in both " +
                                         first.display + " and " + file.display);
            catalog_.tensors.pop_back();
        }
    }
    add_metadata(contents.metadata);
    catalog_.files.push_back(std::move(file));
}

void CatalogAssembly::add_metadata(const nlohmann::ordered_json& metadata) {
    for (const auto& [key, value] : metadata.items()) {
        if (metadata_keys_.insert(key).second) append_new_key(catalog_.metadata, key, value);
    }
}

}  // namespace tensorfs
