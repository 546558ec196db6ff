// The keys each method's config carries, as the published checkpoints of each write them:
//   fp8                 DeepSeek-V3, Qwen3-FP8 (transformers' FineGrainedFP8Config): weight_block_size, fmt
//   compressed-tensors  format (float-quantized, pack-quantized...), config_groups.*.weights: num_bits, strategy,
//                       group_size, block_structure, actorder
//   gptq                bits, group_size (-1: per row), desc_act, sym, checkpoint_format (or format): gptq, gptq_v2
//   awq                 bits, group_size, version (gemm), zero_point
//   mxfp4               gpt-oss: nothing more
//   modelopt            quant_algo NVFP4 or FP8, in quantization_config or in hf_quant_config.json's "quantization"
#include "quantization_config.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace tensorfs {
namespace {

using Json = nlohmann::json;

// Sizes a config may name (group sizes, block sides, bits): anything larger is no size of a real weight.
constexpr std::uint64_t kLargestSize = std::uint64_t{1} << 32;

Json parsed(std::string_view text) {
    if (text.empty()) return Json();
    Json json = Json::parse(text, nullptr, false);
    return json.is_discarded() || !json.is_object() ? Json() : json;
}

const Json* member(const Json& object, const char* key) {
    if (!object.is_object()) return nullptr;
    const auto found = object.find(key);
    return found == object.end() ? nullptr : &*found;
}

std::string text_of(const Json& object, const char* key) {
    const Json* value = member(object, key);
    if (value == nullptr || !value->is_string()) return {};
    std::string text = value->get<std::string>();
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

// A positive integer no larger than kLargestSize; nullopt otherwise.
std::optional<std::uint64_t> size_of(const Json* value) {
    if (value == nullptr || !value->is_number_integer()) return std::nullopt;
    if (value->is_number_unsigned()) {
        const auto size = value->get<std::uint64_t>();
        return size > 0 && size <= kLargestSize ? std::optional(size) : std::nullopt;
    }
    const auto size = value->get<std::int64_t>();
    return size > 0 && static_cast<std::uint64_t>(size) <= kLargestSize ? std::optional<std::uint64_t>(size)
                                                                          : std::nullopt;
}

bool is_true(const Json& object, const char* key) {
    const Json* value = member(object, key);
    return value != nullptr && value->is_boolean() && value->get<bool>();
}

void add_bits(DeclaredQuantization& declared, const Json* value) {
    const auto bits = size_of(value);
    if (!bits || *bits > 64) return;
    const auto as_unsigned = static_cast<unsigned>(*bits);
    if (std::find(declared.bits.begin(), declared.bits.end(), as_unsigned) == declared.bits.end()) {
        declared.bits.push_back(as_unsigned);
    }
}

// A [rows, columns] block size.
void set_block(DeclaredQuantization& declared, const Json* value) {
    if (value == nullptr || !value->is_array() || value->size() != 2) return;
    const auto rows = size_of(&(*value)[0]);
    const auto columns = size_of(&(*value)[1]);
    if (!rows || !columns) return;
    declared.block_rows = *rows;
    declared.block_columns = *columns;
}

void read_fp8(DeclaredQuantization& declared, const Json& config) {
    declared.scheme = QuantScheme::Fp8Block;
    declared.bits = {8};
    set_block(declared, member(config, "weight_block_size"));
    const std::string format = text_of(config, "fmt");
    if (!format.empty() && format != "e4m3") declared.unsupported = "fp8 fmt " + format + " (only e4m3 is)";
}

// The weights' arguments of every config group: bits, strategy, group size, block.
void read_config_groups(DeclaredQuantization& declared, const Json& config) {
    const Json* groups = member(config, "config_groups");
    if (groups == nullptr || !groups->is_object()) return;
    std::optional<std::uint64_t> group_size;
    bool sizes_agree = true;
    for (const auto& [name, group] : groups->items()) {
        const Json* weights = member(group, "weights");
        if (weights == nullptr || !weights->is_object()) continue;
        add_bits(declared, member(*weights, "num_bits"));
        const std::string strategy = text_of(*weights, "strategy");
        if (strategy == "channel") declared.per_row = true;
        if (strategy == "block") set_block(declared, member(*weights, "block_structure"));
        if (const auto size = size_of(member(*weights, "group_size"))) {
            sizes_agree = sizes_agree && (!group_size || *group_size == *size);
            group_size = *size;
        }
    }
    if (group_size && sizes_agree) declared.group_size = *group_size;
}

void read_compressed_tensors(DeclaredQuantization& declared, const Json& config) {
    const std::string format = text_of(config, "format");
    read_config_groups(declared, config);
    if (format == "float-quantized") {
        declared.scheme = QuantScheme::Fp8;
    } else if (format == "pack-quantized") {
        declared.scheme = QuantScheme::PackQuantized;
    } else if (format.empty() || format == "dense") {
        declared.method.clear();   // nothing quantized
    } else {
        declared.unsupported = "compressed-tensors format " + format;
    }
}

void read_gptq(DeclaredQuantization& declared, const Json& config) {
    declared.scheme = QuantScheme::Gptq;
    add_bits(declared, member(config, "bits"));
    const Json* group_size = member(config, "group_size");
    if (const auto size = size_of(group_size)) declared.group_size = *size;
    declared.per_row =
        group_size != nullptr && group_size->is_number_integer() && group_size->get<std::int64_t>() == -1;
    declared.desc_act = is_true(config, "desc_act");
    std::string format = text_of(config, "checkpoint_format");
    if (format.empty()) format = text_of(config, "format");
    declared.gptq_v2 = format == "gptq_v2";
    if (!format.empty() && format != "gptq" && format != "gptq_v2") {
        declared.unsupported = "gptq checkpoint_format " + format;
    }
}

void read_awq(DeclaredQuantization& declared, const Json& config) {
    declared.scheme = QuantScheme::Awq;
    add_bits(declared, member(config, "bits"));
    if (const auto size = size_of(member(config, "group_size"))) declared.group_size = *size;
    const std::string version = text_of(config, "version");
    if (!version.empty() && version != "gemm") declared.unsupported = "awq version " + version + " (only gemm is)";
}

void read_modelopt(DeclaredQuantization& declared, const Json& config, const Json& hf_quant) {
    std::string algorithm = text_of(config, "quant_algo");
    const Json* section = member(hf_quant, "quantization");
    if (algorithm.empty() && section != nullptr) algorithm = text_of(*section, "quant_algo");
    if (algorithm == "nvfp4") {
        declared.scheme = QuantScheme::Nvfp4;
        declared.bits = {4};
        declared.group_size = 16;
    } else if (algorithm == "fp8") {
        declared.scheme = QuantScheme::Fp8;
        declared.bits = {8};
    } else {
        declared.unsupported = "modelopt quant_algo " + (algorithm.empty() ? std::string("(none)") : algorithm);
    }
}

}  // namespace

std::optional<DeclaredQuantization> declared_quantization(std::string_view config_json,
                                                          std::string_view hf_quant_config_json) {
    const Json config = parsed(config_json);
    const Json hf_quant = parsed(hf_quant_config_json);
    const Json* quantization = member(config, "quantization_config");
    static const Json none = Json::object();
    const Json& declared_config = quantization != nullptr && quantization->is_object() ? *quantization : none;

    DeclaredQuantization declared;
    declared.method = text_of(declared_config, "quant_method");
    if (declared.method.empty() && member(hf_quant, "quantization") != nullptr) declared.method = "modelopt";
    if (declared.method.empty()) return std::nullopt;

    if (declared.method == "fp8") {
        read_fp8(declared, declared_config);
    } else if (declared.method == "fbgemm_fp8") {
        declared.scheme = QuantScheme::Fp8;
        declared.bits = {8};
    } else if (declared.method == "compressed-tensors") {
        read_compressed_tensors(declared, declared_config);
    } else if (declared.method == "gptq") {
        read_gptq(declared, declared_config);
    } else if (declared.method == "awq") {
        read_awq(declared, declared_config);
    } else if (declared.method == "mxfp4") {
        declared.scheme = QuantScheme::Mxfp4;
        declared.bits = {4};
    } else if (declared.method == "modelopt") {
        read_modelopt(declared, declared_config, hf_quant);
    } else {
        // bitsandbytes, hqq, torchao...: stored in ways tensorfs does not decode; their tensors stay as stored.
        declared.unsupported = "quant_method " + declared.method;
    }
    if (declared.method.empty()) return std::nullopt;
    return declared;
}

}  // namespace tensorfs
