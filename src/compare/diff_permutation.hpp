// The row order of llama's query and key weights in a GGUF. llama.cpp's converter (LlamaModel.permute) reshapes the
// rows of each head as (2, D/2), D rows a head, and swaps the two axes: the two halves of a head, which Hugging Face's
// rotary embedding pairs up, become interleaved as ggml's rope wants them. `diff` reads the GGUF's rows back in the
// Hugging Face order to compare the two.
#pragma once

#include <cstdint>

namespace tensorfs::compare {

// Whether `rows` rows split into `heads` heads of an even number of rows each.
bool permutable(std::uint64_t rows, std::uint64_t heads);

// The GGUF row that holds row `hf_row` of the Hugging Face tensor, for a tensor of `rows` rows over `heads` heads
// (permutable(rows, heads) must hold). Head h's row h·D + i·D/2 + j (i in {0, 1}) is stored at h·D + 2j + i.
std::uint64_t gguf_row_of(std::uint64_t hf_row, std::uint64_t rows, std::uint64_t heads);

}  // namespace tensorfs::compare
