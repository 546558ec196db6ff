// Whole blocks of stored bytes decoded into one of the value views (float32, or rounded to bfloat16 / float16): the
// one road from stored bytes to values, for the decoded chunks of a mount and for the arrays of the Python module.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensorfs/dtype.hpp"
#include "tensorfs/value_view.hpp"

namespace tensorfs {

// Decodes `blocks` whole blocks of `type` at `stored` into blocks * block_elements values of `view` at `out` (4 or 2
// bytes each, little-endian), with this process's kernels. A 16-bit view goes through a float32 buffer small enough
// to stay in the core's L1 cache. `type` must have a float32 conversion; any alignment of `stored` and `out`.
void decode_blocks(const TypeTraits& type, const std::uint8_t* stored, std::uint64_t blocks, ValueView view,
                   void* out);

}  // namespace tensorfs
