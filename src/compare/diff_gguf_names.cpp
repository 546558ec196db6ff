#include "diff_gguf_names.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace tensorfs::compare {
namespace {

struct NameRule {
    std::string_view hf;     // after "model.layers.N." (per block) or the whole name without .weight/.bias
    std::string_view gguf;   // after "blk.N." (per block) or the whole name
};

constexpr std::array kModelTensors = {
    NameRule{"model.embed_tokens", "token_embd"},
    NameRule{"lm_head", "output"},
    NameRule{"model.norm", "output_norm"},
};

// Per block, for every architecture: gguf-py's ATTN_Q/K/V/OUT, ATTN_NORM, FFN_GATE/UP/DOWN.
constexpr std::array kBlockTensors = {
    NameRule{"self_attn.q_proj", "attn_q"},       NameRule{"self_attn.k_proj", "attn_k"},
    NameRule{"self_attn.v_proj", "attn_v"},       NameRule{"self_attn.o_proj", "attn_output"},
    NameRule{"input_layernorm", "attn_norm"},     NameRule{"mlp.gate_proj", "ffn_gate"},
    NameRule{"mlp.up_proj", "ffn_up"},            NameRule{"mlp.down_proj", "ffn_down"},
};

// The norm after attention: the MLP's input norm in most models; gemma2 has one more norm on each side of both.
constexpr std::array kFfnNorm = {NameRule{"post_attention_layernorm", "ffn_norm"}};
constexpr std::array kGemma2Norms = {
    NameRule{"post_attention_layernorm", "post_attention_norm"},
    NameRule{"pre_feedforward_layernorm", "ffn_norm"},
    NameRule{"post_feedforward_layernorm", "post_ffw_norm"},
};
constexpr std::array kQwen3Norms = {NameRule{"self_attn.q_norm", "attn_q_norm"},
                                    NameRule{"self_attn.k_norm", "attn_k_norm"}};
// phi3 keeps q, k and v in one matrix, and gate and up in one (gguf-py maps gate_up_proj to ffn_up).
constexpr std::array kPhi3Fused = {NameRule{"self_attn.qkv_proj", "attn_qkv"},
                                   NameRule{"mlp.gate_up_proj", "ffn_up"}};

constexpr std::array<std::string_view, 6> kArchitectures = {"llama", "qwen2", "qwen3", "gemma", "gemma2", "phi3"};

template <std::size_t N>
std::optional<std::string_view> look_up(const std::array<NameRule, N>& rules, std::string_view hf) {
    for (const NameRule& rule : rules) {
        if (rule.hf == hf) return rule.gguf;
    }
    return std::nullopt;
}

std::optional<std::string_view> block_tensor(std::string_view architecture, std::string_view hf) {
    if (auto found = look_up(kBlockTensors, hf)) return found;
    if (architecture == "gemma2") return look_up(kGemma2Norms, hf);
    if (auto found = look_up(kFfnNorm, hf)) return found;
    if (architecture == "qwen3") return look_up(kQwen3Norms, hf);
    if (architecture == "phi3") return look_up(kPhi3Fused, hf);
    return std::nullopt;
}

// "model.layers.12.mlp.up_proj" -> 12 and "mlp.up_proj".
std::optional<std::pair<std::string_view, std::string_view>> split_block(std::string_view name) {
    constexpr std::string_view kPrefix = "model.layers.";
    if (!name.starts_with(kPrefix)) return std::nullopt;
    name.remove_prefix(kPrefix.size());
    const std::size_t dot = name.find('.');
    if (dot == 0 || dot == std::string_view::npos) return std::nullopt;
    const std::string_view number = name.substr(0, dot);
    if (!std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
    return std::pair{number, name.substr(dot + 1)};
}

}  // namespace

bool has_gguf_name_map(std::string_view architecture) {
    return !architecture.empty() &&
           std::find(kArchitectures.begin(), kArchitectures.end(), architecture) != kArchitectures.end();
}

std::optional<GgufCounterpart> gguf_counterpart(std::string_view hf_name, const GgufModel& model) {
    if (!has_gguf_name_map(model.architecture)) return std::nullopt;
    std::string_view stem = hf_name, suffix;
    for (const std::string_view ending : {std::string_view(".weight"), std::string_view(".bias")}) {
        if (hf_name.ends_with(ending)) {
            stem = hf_name.substr(0, hf_name.size() - ending.size());
            suffix = ending;
        }
    }
    if (suffix.empty()) return std::nullopt;

    GgufCounterpart counterpart;
    std::string_view mapped;
    if (const auto block = split_block(stem)) {
        const auto found = block_tensor(model.architecture, block->second);
        if (!found) return std::nullopt;
        counterpart.name = "blk." + std::string(block->first) + "." + std::string(*found) + std::string(suffix);
        mapped = *found;
    } else {
        const auto found = look_up(kModelTensors, stem);
        if (!found) return std::nullopt;
        counterpart.name = std::string(*found) + std::string(suffix);
        mapped = *found;
    }
    // llama's converter (LlamaModel.modify_tensors) permutes q_proj with the query heads and k_proj with the key
    // heads, weights and biases alike.
    if (model.architecture == "llama") {
        if (mapped == "attn_q") counterpart.permuted_heads = model.head_count;
        if (mapped == "attn_k") counterpart.permuted_heads = model.head_count_kv;
    }
    // Gemma and Gemma2's converters add 1 to every tensor whose name ends in "norm.weight".
    if ((model.architecture == "gemma" || model.architecture == "gemma2") && hf_name.ends_with("norm.weight")) {
        counterpart.added = 1;
    }
    return counterpart;
}

}  // namespace tensorfs::compare
