// What a parser makes of a source: the files, the tensors in them and the model-level metadata.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
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

struct Quantization;

struct Tensor {
    std::string name;
    const TypeTraits* type = nullptr;
    std::vector<std::uint64_t> shape;  // row-major (numpy) order; empty for a scalar
    std::uint64_t elements = 0;
    std::uint64_t nbytes = 0;          // stored bytes
    std::uint32_t file = 0;            // index into Catalog::files
    std::uint64_t offset = 0;          // absolute byte offset of the stored bytes in that file
    // A PyTorch view that is not contiguous in C order: its strides in elements (one per dimension) and its first
    // element's index in its storage, as torch gives them. Its stored bytes are then the bytes its elements span
    // (the first element at `offset`), not its values in C order. Empty for every other tensor.
    std::vector<std::uint64_t> stride;
    std::uint64_t storage_offset = 0;
    // False when the stored bytes are not the values in C order (a strided storage: every PyTorch view above):
    // model.safetensors and the 16-bit views then serve the tensor's decoded values, never its raw bytes.
    bool raw_in_c_order = true;
    // A weight a checkpoint stores quantized, in parts (FP8 with scales, GPTQ, AWQ...): how its values are made
    // from them (quantization.hpp). Its name and shape are then the logical ones, the ones the dequantized model
    // uses, and its type, file, offset and nbytes those of its main stored part (its raw bytes). Null for every
    // other tensor.
    std::shared_ptr<const Quantization> quantization;
    // A stored part of a quantized weight other than its main one (its scales, zero points, g_idx...): listed as a
    // tensor of its own, but no tensor of the dequantized model.
    bool quantization_part = false;

    bool strided() const { return !stride.empty(); }
    // Whether the tensor has values to serve (the dequant files): a quantized weight that can be decoded, or a
    // dtype with a float32 conversion.
    bool has_values() const;
    std::uint64_t blocks() const { return elements / type->block_elements; }
    std::uint64_t f32_bytes() const { return elements * 4; }
};

// The schemes of quantized weights whose values tensorfs makes (interface.md, "Quantized checkpoints of the
// safetensors world").
enum class QuantScheme : std::uint8_t { Fp8Block, Fp8, Mxfp4, Nvfp4, Gptq, Awq, PackQuantized };

// "fp8-block", "fp8", "mxfp4", "nvfp4", "gptq", "awq", "pack-quantized": as meta.json names the scheme.
std::string_view scheme_name(QuantScheme scheme);

// One stored tensor a quantized weight is made of.
struct QuantizedPart {
    std::string role;   // its name's suffix, as the scheme names it: "weight", "weight_scale_inv", "qzeros", "g_idx"...
    Tensor stored;      // as its file lists it: name, dtype, shape, file, offset, nbytes
};

// How a quantized weight's values are made from its parts.
struct Quantization {
    QuantScheme scheme = QuantScheme::Fp8;
    unsigned bits = 8;                  // of one stored value
    std::uint64_t group_size = 0;       // values along a stored row that share a scale (and a zero point); 0: none
    std::uint64_t block_rows = 0;       // fp8-block: the rows and columns one scale covers
    std::uint64_t block_columns = 0;
    bool zeros_less_one = false;        // GPTQ's v1 checkpoints store every zero point less one
    std::vector<QuantizedPart> parts;   // the main part (the tensor's raw bytes) first
    std::string problem;                // why its values cannot be made; "" when they can

    // The part of that role; nullptr when the weight has none.
    const QuantizedPart* part(std::string_view role) const {
        for (const auto& part : parts) {
            if (part.role == role) return &part;
        }
        return nullptr;
    }
};

// The scheme as `ls` shows it in its DTYPE column: "FP8-BLOCK", "NVFP4", "GPTQ-INT4", "PACK-QUANTIZED-INT8"...
std::string_view quantized_dtype(const Quantization& quantization);

// Why a tensor has no values (Tensor::has_values is false), in a few words: "dtype C64 has no float32 conversion",
// "its gptq parts do not fit: ...".
std::string why_no_values(const Tensor& tensor);

inline bool Tensor::has_values() const {
    return quantization ? quantization->problem.empty() : type->has_dequant();
}

struct Catalog {
    std::string format;                                            // "safetensors", "gguf" or "pytorch"
    std::vector<SourceFile> files;
    std::vector<Tensor> tensors;                                   // in file order
    nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
    nlohmann::ordered_json metadata_types = nlohmann::ordered_json::object();  // GGUF only
    // What keeps the model's quantization from being what its config says, beyond its weights' own problems (a
    // quantization_config whose scheme no tensor has): one line each.
    std::vector<std::string> quantization_problems;
};

}  // namespace tensorfs
