// How llama.cpp's converter (convert_hf_to_gguf.py, with gguf-py's tensor map) names and changes a Hugging Face
// tensor when it writes a GGUF file, for the architectures `tensorfs diff --names gguf` pairs: llama (mistral
// converts as llama), qwen2, qwen3, gemma, gemma2 and phi3, as the GGUF's `general.architecture` names them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tensorfs::compare {

// What the converter made of a model: read from the GGUF's metadata.
struct GgufModel {
    std::string architecture;       // general.architecture
    std::uint64_t head_count = 0;   // ARCH.attention.head_count (0 when absent)
    std::uint64_t head_count_kv = 0;  // ARCH.attention.head_count_kv (head_count when absent)
};

struct GgufCounterpart {
    std::string name;   // the tensor's name in the GGUF
    // llama's query and key weights (and biases): the converter reorders the rows within each of this many heads
    // (see diff_permutation.hpp); 0 when the rows are as in the Hugging Face tensor.
    std::uint64_t permuted_heads = 0;
    // Gemma's norm weights: the converter stores w + 1 (llama.cpp's RMS norm multiplies by w, Gemma's by 1 + w).
    float added = 0;
};

// Whether there is a name map for the architecture.
bool has_gguf_name_map(std::string_view architecture);

// The GGUF counterpart of the Hugging Face tensor `hf_name`, or nullopt when the converter has no name for it.
std::optional<GgufCounterpart> gguf_counterpart(std::string_view hf_name, const GgufModel& model);

}  // namespace tensorfs::compare
