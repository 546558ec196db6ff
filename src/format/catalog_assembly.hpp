// One Catalog out of the files of one model (the shards of a folder or of an index), whatever their format.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include "file_contents.hpp"
#include "tensorfs/catalog.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs {

class CatalogAssembly {
public:
    // `format` is model.json's "format": "safetensors", "pytorch".
    CatalogAssembly(std::string format, Problems& problems);

    // Appends the file and its tensors and merges its metadata. A tensor name that an earlier file already holds
    // is a problem naming both files.
    void add_file(SourceFile file, FileContents contents);

    // Adds the keys of `metadata` that the catalog does not hold yet. Metadata is informative, so a key that
    // two sources give different values is no reason to refuse a model: the first source's value wins (files in
    // the order they are added; an index's own metadata is added before its shards).
    void add_metadata(const nlohmann::ordered_json& metadata);

    const Catalog& catalog() const { return catalog_; }
    Catalog take() { return std::move(catalog_); }

private:
    // Tensors by name, as their place in catalog_.tensors: no copy of 100,000 names.
    struct NameOf {
        const Catalog* catalog;
        std::string_view operator()(std::uint32_t tensor) const { return catalog->tensors[tensor].name; }
    };
    struct HashByName {
        NameOf name;
        std::size_t operator()(std::uint32_t tensor) const { return std::hash<std::string_view>()(name(tensor)); }
    };
    struct SameName {
        NameOf name;
        bool operator()(std::uint32_t a, std::uint32_t b) const { return name(a) == name(b); }
    };

    Problems& problems_;
    Catalog catalog_;
    std::unordered_set<std::uint32_t, HashByName, SameName> tensor_names_;
    std::unordered_set<std::string> metadata_keys_;
};

}  // namespace tensorfs
