// The values of a quantized weight (Tensor::quantization), made from its parts: rows of its logical shape (a row is
// its last dimension), each from the bytes of its parts that it needs, read exactly (nothing of other tensors).
#pragma once

#include <cstdint>

#include "tensorfs/catalog.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/value_view.hpp"

namespace tensorfs {

// Elements in one row of a quantized weight's logical shape.
inline std::uint64_t row_elements(const Tensor& tensor) { return tensor.shape.empty() ? 1 : tensor.shape.back(); }

// Whether the scheme stores the transpose of the logical weight (GPTQ, AWQ, MXFP4): rows are then gathered from
// across the parts' bytes, so more of them at once cost fewer reads.
bool stored_transposed(const Quantization& quantization);

// The rows of the weight a reader that wants it whole (cat, Python) has made at a time: about 4 MiB of values in
// `view`, or 16 MiB for a scheme stored transposed (each of its reads takes a run of every stored row, which more
// rows make longer). At least one row.
std::uint64_t rows_at_once(const Tensor& tensor, ValueView view);

// Writes rows [first_row, first_row + rows) of the weight's values in `view` to `out`. The weight must have values
// (Tensor::has_values). Throws IoError when a part cannot be read, or when its values do not fit (a g_idx entry out
// of range), naming the tensor.
void write_quantized_rows(const SourceFiles& files, const Tensor& tensor, std::uint64_t first_row,
                          std::uint64_t rows, ValueView view, void* out);

// What in the values of the weight's parts keeps its values from being made (a g_idx entry out of range), as
// write_quantized_rows would say it; "" when nothing does. Reads the parts that hold such values (g_idx).
std::string quantized_values_problem(const SourceFiles& files, const Tensor& tensor);

}  // namespace tensorfs
