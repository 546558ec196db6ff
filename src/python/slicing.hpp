// What `slice[key]` selects of a tensor (safetensors' get_slice indexing: ints, slices with a positive step, and
// `...`): the shape of the result, and the runs of elements, contiguous in the tensor, that make it up in C order.
#pragma once

#include <cstdint>
#include <vector>

#include <pybind11/pybind11.h>

#include "tensorfs/tensor_values.hpp"  // ElementRun

namespace tensorfs::python {

struct Selection {
    std::vector<std::uint64_t> shape;   // of the result: an int index takes its dimension away
    std::vector<ElementRun> runs;       // in the result's order; together they hold every element of the result
    std::uint64_t elements = 0;
};

// Raises IndexError for an index out of range or too many indices, TypeError for a key of another kind, ValueError
// for a step that is not positive.
Selection select(const std::vector<std::uint64_t>& shape, const pybind11::handle& key);

}  // namespace tensorfs::python
