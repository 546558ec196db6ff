// What a format's parser reads from one file of a model, before the files are put together into a Catalog.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensorfs/catalog.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs {

struct FileContents {
    std::uint64_t file_size = 0;
    std::vector<Tensor> tensors;  // in the order the catalog lists them; Tensor::file is left 0
    nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
};

// Appends `key` to an ordered_json object that does not hold it yet. ordered_json's own insertions look the key up
// in linear time, which makes a model with many metadata keys cost quadratic time.
inline void append_new_key(nlohmann::ordered_json& object, const std::string& key, nlohmann::ordered_json value) {
    object.get_ref<nlohmann::ordered_json::object_t&>().emplace_back(key, std::move(value));
}

// Reads one file of a format with bounded reads, adding one problem (naming the file) per broken rule; nullopt
// when any rule broke. It may also throw SourceError for a rule that ends the reading. `parallel_reads`: how
// many reads of this file it may have in flight at once (see SourceFolder::parallel_reads).
using FileReader =
    std::function<std::optional<FileContents>(const SourceObject& file, unsigned parallel_reads, Problems& problems)>;

}  // namespace tensorfs
