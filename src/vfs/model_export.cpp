// The layout of model.safetensors, written as safetensors' own writer does: an 8-byte length, the JSON header
// ("__metadata__" first, then every tensor in the source's order as {"dtype", "shape", "data_offsets"}, compact),
// padded with spaces so the data starts on a multiple of 8, then the tensors' bytes back to back from offset 0.
#include "tensorfs/model_export.hpp"

#include <algorithm>
#include <array>

#include "tensorfs/safetensors_dtypes.hpp"

namespace tensorfs {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<std::pair<std::string_view, ExportDtype>, 4> kExportDtypes{{
    {"keep", ExportDtype::Keep}, {"bf16", ExportDtype::BF16}, {"f16", ExportDtype::F16}, {"f32", ExportDtype::F32}}};

constexpr std::uint64_t kLengthBytes = 8;

ValueView view_of(ExportDtype dtype) {
    switch (dtype) {
        case ExportDtype::BF16: return ValueView::BF16;
        case ExportDtype::F16: return ValueView::F16;
        default: return ValueView::F32;
    }
}

// Where a tensor's bytes come from and under which dtype; nullopt when the file cannot hold it.
struct Source {
    std::optional<ValueView> view;
    std::string_view dtype;
};

std::optional<Source> source_of(const Tensor& tensor, ExportDtype dtype) {
    const TypeTraits& type = *tensor.type;
    if (tensor.quantization) {
        // As stored (its main part's raw bytes) for keep; else its values, when it has them.
        if (dtype == ExportDtype::Keep) {
            const std::optional<std::string_view> stored = safetensors_dtype_of(type);
            return stored ? std::optional(Source{std::nullopt, *stored}) : std::nullopt;
        }
        if (!tensor.has_values()) return std::nullopt;
        return Source{view_of(dtype), dtype_name(view_of(dtype))};
    }
    const std::optional<std::string_view> stored = safetensors_dtype_of(type);
    const std::optional<ValueView> stored_view = view_stored_as(type);
    const bool floating = type.has_dequant() && !(stored && is_integer_dtype(*stored));
    if (dtype != ExportDtype::Keep && floating) {
        const ValueView wanted = view_of(dtype);
        if (stored_view == wanted && tensor.raw_in_c_order) return Source{std::nullopt, *stored};
        return Source{wanted, dtype_name(wanted)};
    }
    if (stored && tensor.raw_in_c_order) return Source{std::nullopt, *stored};
    // Bytes that are not the values in C order: the values in the tensor's own 16/32-bit dtype, else float32.
    if (stored_view) return Source{stored_view, dtype_name(*stored_view)};
    if (type.has_dequant()) return Source{ValueView::F32, dtype_name(ValueView::F32)};
    return std::nullopt;
}

// A JSON string holding `text`. Names must be UTF-8 already (strict: throws json::type_error otherwise); metadata
// text that is not UTF-8 gets U+FFFD, as in model.json.
std::string json_string(const std::string& text, bool strict) {
    return Json(text).dump(-1, ' ', false,
                           strict ? Json::error_handler_t::strict : Json::error_handler_t::replace);
}

// safetensors metadata are strings: a string stays itself, anything else (GGUF numbers, arrays, booleans; an
// index's total_size) becomes its JSON text.
std::string metadata_text(const Json& value) {
    if (value.is_string()) return value.get<std::string>();
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string metadata_object(const Json& metadata) {
    // The writer's own "format": the source's when it has one (its meaning carries over), else "pt".
    const auto format = metadata.find("format");
    std::string text = "{\"format\":" + json_string(format != metadata.end() ? metadata_text(*format) : "pt", false);
    for (const auto& [key, value] : metadata.items()) {
        if (key == "format") continue;
        text += ',' + json_string(key, true) + ':' + json_string(metadata_text(value), false);
    }
    return text + '}';
}

void append_tensor_entry(std::string& text, const Tensor& tensor, std::string_view dtype, std::uint64_t begin,
                         std::uint64_t end) {
    text += ',';
    text += json_string(tensor.name, true);
    text += ":{\"dtype\":\"";
    text += dtype;
    text += "\",\"shape\":[";
    for (std::size_t i = 0; i < tensor.shape.size(); ++i) {
        if (i > 0) text += ',';
        text += std::to_string(tensor.shape[i]);
    }
    text += "],\"data_offsets\":[" + std::to_string(begin) + ',' + std::to_string(end) + "]}";
}

}  // namespace

std::optional<ExportDtype> export_dtype_named(std::string_view name) {
    for (const auto& [text, dtype] : kExportDtypes) {
        if (text == name) return dtype;
    }
    return std::nullopt;
}

std::string_view name_of(ExportDtype dtype) {
    for (const auto& [text, value] : kExportDtypes) {
        if (value == dtype) return text;
    }
    return "keep";
}

ModelExport::ModelExport(const Catalog& catalog, ExportDtype dtype) : dtype_(dtype) {
    try {
        lay_out(catalog);
    } catch (const Json::type_error& error) {
        // Only a name or key that is not UTF-8 makes the strict dump throw.
        error_ = "a tensor name or metadata key is not valid UTF-8, which a safetensors header must be";
    }
    if (!error_.empty()) {
        header_.clear();
        parts_.clear();
    }
}

void ModelExport::lay_out(const Catalog& catalog) {
    std::string json = "{\"__metadata__\":" + metadata_object(catalog.metadata);
    std::uint64_t data_size = 0;
    parts_.reserve(catalog.tensors.size());
    for (std::uint32_t index = 0; index < catalog.tensors.size(); ++index) {
        const Tensor& tensor = catalog.tensors[index];
        // The dequantized model has no scales, zero points or g_idx: they are in its values.
        if (tensor.quantization_part && dtype_ != ExportDtype::Keep) {
            ++parts_left_out_;
            continue;
        }
        const std::optional<Source> source = source_of(tensor, dtype_);
        if (!source) {
            skipped_.push_back(index);
            continue;
        }
        const std::uint64_t size = source->view ? tensor.elements * bytes_per_value(*source->view) : tensor.nbytes;
        // keep writes a quantized weight as stored: its main part's name and shape.
        const bool as_stored = tensor.quantization && dtype_ == ExportDtype::Keep;
        append_tensor_entry(json, as_stored ? tensor.quantization->parts.front().stored : tensor, source->dtype,
                            data_size, data_size + size);
        parts_.push_back(Part{index, source->view, source->dtype, data_size, size});
        data_size += size;
        if (json.size() > kMaxSafetensorsHeader) break;   // the error below; no need to go on
    }
    json += '}';
    json.append((kLengthBytes - json.size() % kLengthBytes) % kLengthBytes, ' ');
    if (json.size() > kMaxSafetensorsHeader) {
        error_ = "its safetensors header would take more than " + std::to_string(kMaxSafetensorsHeader) +
                 " bytes, the most safetensors readers accept";
        return;
    }
    header_.reserve(kLengthBytes + json.size());
    for (std::uint64_t i = 0; i < kLengthBytes; ++i) header_ += static_cast<char>((json.size() >> (8 * i)) & 0xFF);
    header_ += json;
    for (Part& part : parts_) part.begin += header_.size();
}

std::uint64_t ModelExport::size() const {
    if (!available()) return 0;
    return parts_.empty() ? header_.size() : parts_.back().begin + parts_.back().size;
}

std::size_t ModelExport::part_at(std::uint64_t offset) const {
    const auto found = std::upper_bound(parts_.begin(), parts_.end(), offset,
                                        [](std::uint64_t at, const Part& part) { return at < part.begin + part.size; });
    return static_cast<std::size_t>(found - parts_.begin());
}

nlohmann::ordered_json ModelExport::summary(const Catalog& catalog) const {
    Json summary;
    summary["dtype"] = name_of(dtype_);
    if (!available()) {
        summary["error"] = error_;
        return summary;
    }
    summary["file"] = "model.safetensors";
    summary["size"] = size();
    summary["header_size"] = header_.size();
    summary["tensor_count"] = parts_.size();
    auto& skipped = summary["skipped"] = Json::array();
    for (const std::uint32_t index : skipped_) skipped.push_back(catalog.tensors[index].name);
    if (parts_left_out_ > 0) summary["quantization_parts_left_out"] = parts_left_out_;
    return summary;
}

}  // namespace tensorfs
