// One Catalog out of the checked headers of several safetensors files (the shards of one model).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>

#include "safetensors_header.hpp"
#include "tensorfs/catalog.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs::safetensors {

class CatalogAssembly {
public:
    explicit CatalogAssembly(Problems& problems);

    // Appends the file and its tensors (in offset order) and merges its __metadata__. A tensor name that an
    // earlier file already holds is a problem naming both files.
    void add_file(SourceFile file, Header header);

    // Adds the keys of `metadata` that the catalog does not hold yet. Metadata is informative, so a key that
    // two sources give different values is no reason to refuse a model: the first source's value wins (files in
    // the order they are added; an index's own metadata is added before its shards).
    void add_metadata(const nlohmann::json& metadata);

    // The index of the file that holds tensor `name`, if any.
    std::optional<std::uint32_t> file_of(const std::string& name) const;

    const Catalog& catalog() const { return catalog_; }
    Catalog take() { return std::move(catalog_); }

private:
    Problems& problems_;
    Catalog catalog_;
    std::unordered_map<std::string, std::uint32_t> file_of_tensor_;
};

}  // namespace tensorfs::safetensors
