// What a parser makes of a source: the files, the tensors in them and the model-level metadata.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensorfs/dtype.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs {

struct SourceFile {
    std::string path;      // how messages name it: as opened (a path as given, or a URL)
    std::string display;   // relative to the mounted SOURCE's folder: what meta.json and model.json show
    std::uint64_t size = 0;
    std::shared_ptr<const SourceObject> object;  // the file, opened while its header was read
};

struct Tensor {
    std::string name;
    const TypeTraits* type = nullptr;
    std::vector<std::uint64_t> shape;  // row-major (numpy) order; empty for a scalar
    std::uint64_t elements = 0;
    std::uint64_t nbytes = 0;          // stored bytes
    std::uint32_t file = 0;            // index into Catalog::files
    std::uint64_t offset = 0;          // absolute byte offset of the stored bytes in that file
    // False when the stored bytes are not the values in C order (a strided storage): model.safetensors and the
    // 16-bit views then serve the tensor's decoded values, never its raw bytes.
    bool raw_in_c_order = true;

    std::uint64_t blocks() const { return elements / type->block_elements; }
    std::uint64_t f32_bytes() const { return elements * 4; }
};

struct Catalog {
    std::string format;                                            // "safetensors" or "gguf"
    std::vector<SourceFile> files;
    std::vector<Tensor> tensors;                                   // in file order
    nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
    nlohmann::ordered_json metadata_types = nlohmann::ordered_json::object();  // GGUF only
};

}  // namespace tensorfs
