#include "safetensors_assembly.hpp"

#include "safetensors_json.hpp"

namespace tensorfs::safetensors {

CatalogAssembly::CatalogAssembly(Problems& problems)
    : problems_(problems), tensor_names_(0, HashByName{NameOf{&catalog_}}, SameName{NameOf{&catalog_}}) {
    catalog_.format = "safetensors";
}

void CatalogAssembly::add_file(SourceFile file, Header header) {
    const auto index = static_cast<std::uint32_t>(catalog_.files.size());
    for (auto& tensor : header.tensors) {
        tensor.file = index;
        catalog_.tensors.push_back(std::move(tensor));
        const auto [found, added] = tensor_names_.insert(static_cast<std::uint32_t>(catalog_.tensors.size() - 1));
        if (!added) {
            const Tensor& twin = catalog_.tensors.back();
            const SourceFile& first = catalog_.files[catalog_.tensors[*found].file];
            problems_.add(file.path,
                          "tensor " + json_quoted(twin.name) + " is in both " + first.display + " and " + file.display);
            catalog_.tensors.pop_back();
        }
    }
    add_metadata(header.metadata);
    catalog_.files.push_back(std::move(file));
}

void CatalogAssembly::add_metadata(const nlohmann::json& metadata) {
    for (const auto& [key, value] : metadata.items()) {
        if (!catalog_.metadata.contains(key)) catalog_.metadata[key] = value;
    }
}

}  // namespace tensorfs::safetensors
