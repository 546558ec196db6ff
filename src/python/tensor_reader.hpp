// Tensors of an opened model made into arrays for one framework and dtype request: with no copy where the file's
// bytes are the array (a local file, the dtype asked, aligned), else written once into a new array by the engine
// (src/vfs/tensor_values.hpp), with the GIL released while bytes are fetched and decoded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <pybind11/pybind11.h>

#include "arrays.hpp"
#include "tensorfs/engine.hpp"
#include "slicing.hpp"

namespace tensorfs::python {

class TensorReader {
public:
    // Call with the GIL held, as every member: they make Python objects.
    TensorReader(std::shared_ptr<const Engine> model, Framework framework, std::optional<ValueView> dtype);

    const Engine& model() const { return *model_; }

    // The array a tensor becomes; raises tensorfs.Error for a tensor that has neither a dtype of the framework nor
    // float32 values (ggml's Q8_1, Q8_K: raw() gives their bytes).
    ArrayPlan plan(std::uint32_t tensor) const;

    // The whole tensor.
    pybind11::object whole(std::uint32_t tensor) const;
    // The tensors by name, in the order given (load): written in batches, the source read in its order by all the
    // model's threads at once; Ctrl-C is honoured between batches.
    pybind11::dict many(const std::vector<std::uint32_t>& tensors) const;
    // The elements `selection` picks (write_element_runs: a remote file sends the bytes of a run of rows, and the
    // blocks that hold a column slice's rows, each once).
    pybind11::object part(std::uint32_t tensor, const Selection& selection) const;

private:
    // part() of a quantized weight: its touched rows decoded in batches, the selected elements copied to `out`.
    void write_quantized_part(const Tensor& t, const ArrayPlan& plan, const Selection& selection, char* out) const;

    // The array over the mapped file for elements [first, first + count), when that needs no copy.
    std::optional<pybind11::object> mapped(std::uint32_t tensor, const ArrayPlan& plan, std::uint64_t first,
                                          std::uint64_t count, const std::vector<std::uint64_t>& shape) const;

    std::shared_ptr<const Engine> model_;
    ArrayMaker maker_;
    std::optional<ValueView> dtype_;
};

}  // namespace tensorfs::python
