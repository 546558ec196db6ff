// MOUNTPOINT/model.safetensors: the whole model as one safetensors file, laid out at mount (the header and where
// every tensor's bytes go) and read by Content. Each tensor keeps its dtype and raw bytes where safetensors has
// that dtype, or is given as one of its value views (float32, or rounded to BF16 / F16).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensorfs/catalog.hpp"
#include "tensorfs/value_view.hpp"

namespace tensorfs {

// The mount option export_dtype: keep every dtype safetensors has (ggml quants become F32), or convert every
// floating tensor to BF16, F16 or F32 (integers and bools keep theirs).
enum class ExportDtype : std::uint8_t { Keep, BF16, F16, F32 };

// "keep", "bf16", "f16", "f32".
std::optional<ExportDtype> export_dtype_named(std::string_view name);
std::string_view name_of(ExportDtype dtype);

// safetensors' MAX_HEADER_SIZE: a larger header is refused by every reader.
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

class ModelExport {
public:
    // Where one tensor's bytes in the file come from.
    struct Part {
        std::uint32_t tensor;
        std::optional<ValueView> view;   // nullopt: the tensor's raw bytes; else that view of its values
        std::string_view dtype;          // as the header names it
        std::uint64_t begin;             // byte offset in the file
        std::uint64_t size;
    };

    // Lays the file out. A model whose header would pass safetensors' limit, or that safetensors cannot name,
    // gets no file: available() is false and error() says why.
    ModelExport(const Catalog& catalog, ExportDtype dtype);

    ExportDtype dtype() const { return dtype_; }
    bool available() const { return error_.empty(); }
    const std::string& error() const { return error_; }

    // The whole file; 0 when not available.
    std::uint64_t size() const;
    // The 8-byte little-endian length, the JSON text and its padding: the file's first bytes.
    const std::string& header() const { return header_; }
    // In file order (the catalog's), back to back after the header.
    const std::vector<Part>& parts() const { return parts_; }
    // The first part that ends after `offset`, or parts().size().
    std::size_t part_at(std::uint64_t offset) const;
    // Tensors the file leaves out: no safetensors dtype and no values (ggml's Q8_1 and Q8_K, quantized weights whose
    // parts do not fit). The parts of quantized weights are no tensors of a dequantized model: not skipped, left out.
    const std::vector<std::uint32_t>& skipped() const { return skipped_; }

    // model.json's "export" entry: dtype, size, tensors, skipped names; or the error.
    nlohmann::ordered_json summary(const Catalog& catalog) const;

private:
    void lay_out(const Catalog& catalog);

    ExportDtype dtype_;
    std::string error_;
    std::string header_;
    std::vector<Part> parts_;
    std::vector<std::uint32_t> skipped_;
    std::uint64_t parts_left_out_ = 0;   // parts of quantized weights, which a dequantized export has no use for
};

}  // namespace tensorfs
