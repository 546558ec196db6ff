#include "tensorfs/dequantized_config.hpp"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "tensorfs/errors.hpp"
#include "tensorfs/model_config.hpp"

namespace tensorfs {
namespace {

// A file whose bytes are held in memory, with the size and time of the file it stands for.
class TextFile final : public SourceObject {
public:
    TextFile(const SourceObject& original, std::string text)
        : SourceObject(original.name(), text.size(), original.modified()), text_(std::move(text)) {}

    void read(std::uint64_t offset, std::size_t length, void* dst) const override {
        if (offset > text_.size() || length > text_.size() - offset) throw IoError(name(), "read past the end");
        std::memcpy(dst, text_.data() + offset, length);
    }

private:
    std::string text_;
};

// The config's text without its quantization_config; "" when it has none or cannot be read as JSON.
std::string without_quantization_config(const SourceObject& config) {
    const std::string text = config_file_text(config);
    nlohmann::ordered_json json = nlohmann::ordered_json::parse(text, nullptr, false);
    if (json.is_discarded() || !json.is_object() || !json.contains("quantization_config")) return {};
    json.erase("quantization_config");
    return json.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace

void show_dequantized_config(ModelFolder& folder, const Catalog& catalog, ExportDtype dtype) {
    const bool quantized = std::any_of(catalog.tensors.begin(), catalog.tensors.end(),
                                       [](const Tensor& tensor) { return tensor.quantization != nullptr; });
    if (dtype == ExportDtype::Keep || !quantized) return;
    std::erase_if(folder.side_files, [](const FolderFile& file) { return file.path == "hf_quant_config.json"; });
    for (FolderFile& file : folder.side_files) {
        if (file.path != "config.json" || !file.problem.empty()) continue;
        std::string text = without_quantization_config(*file.object);
        if (!text.empty()) file.object = std::make_shared<TextFile>(*file.object, std::move(text));
    }
}

}  // namespace tensorfs
