#include "tensorfs/model_config.hpp"

#include "format/quantized_weights.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs {
namespace {

// A config larger than this is no model's config: left unread.
constexpr std::uint64_t kLargestConfig = 16 << 20;

// The text of `path` in `folder`; "" when it is missing or cannot be read.
std::string text_of(const SourceFolder& folder, const std::string& path, LookedUpFiles& looked_up) {
    try {
        const auto file = folder.open_if_exists(path);
        looked_up.emplace(path, file);
        return file == nullptr ? std::string() : config_file_text(*file);
    } catch (const SourceError&) {
        return {};
    }
}

// The config named `name` beside the model's file, else at the top of the folder.
std::string config_text(const SourceFolder& folder, const std::string& model_path, const std::string& name,
                        LookedUpFiles& looked_up) {
    const auto slash = model_path.rfind('/');
    if (slash != std::string::npos) {
        std::string beside = text_of(folder, model_path.substr(0, slash + 1) + name, looked_up);
        if (!beside.empty()) return beside;
    }
    return text_of(folder, name, looked_up);
}

}  // namespace

std::string config_file_text(const SourceObject& file) {
    if (file.size() > kLargestConfig) return {};
    std::string text(file.size(), '\0');
    try {
        file.read(0, text.size(), text.data());
    } catch (const IoError&) {
        return {};
    }
    return text;
}

void find_quantization(Catalog& catalog, const SourceFolder& folder, const std::string& model_path, bool listed,
                       LookedUpFiles& looked_up) {
    if (catalog.format == "gguf") return;
    const bool quantized_names = may_hold_quantized_weights(catalog);
    if (!quantized_names && !listed) return;
    const std::string config = config_text(folder, model_path, "config.json", looked_up);
    const std::string hf_quant_config =
        quantized_names ? config_text(folder, model_path, "hf_quant_config.json", looked_up) : std::string();
    const std::optional<DeclaredQuantization> declared = declared_quantization(config, hf_quant_config);
    if (quantized_names || declared) find_quantized_weights(catalog, declared ? &*declared : nullptr);
}

}  // namespace tensorfs
