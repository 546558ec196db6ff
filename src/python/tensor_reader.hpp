// Tensors of an opened model made into arrays for one framework, dtype request and device: with no copy where the
// file's bytes are the array (a local file, the dtype asked, aligned), else written once by the engine
// (src/vfs/tensor_values.hpp) into memory of the module's own, with the GIL released and Ctrl-C honoured at once
// (interruptible.hpp); then moved to the device, when that is not the CPU, with one copy.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "arrays.hpp"
#include "tensorfs/engine.hpp"
#include "slicing.hpp"

namespace tensorfs::python {

// Whether writing `bytes` of a tensor is short enough to do on the calling thread (run_interruptibly's `brief`): a
// local source, less than an array of memory of its own.
bool brief(const Engine& model, std::uint64_t bytes);

class TensorReader {
public:
    // Call with the GIL held, as every member: they make Python objects. `device` is a torch device ("cpu",
    // "cuda:0"), "cpu" for numpy.
    TensorReader(std::shared_ptr<const Engine> model, Framework framework, std::optional<ValueView> dtype,
                 std::string device);

    const Engine& model() const { return *model_; }

    // The array a tensor becomes. Raises TypeError for an integer tensor that no dtype of the framework holds
    // exactly (a uint64 in a torch without one, dtype=None), tensorfs.Error for a tensor that has neither a dtype of
    // the framework nor float32 values (ggml's Q8_1, Q8_K: raw() gives their bytes).
    ArrayPlan plan(std::uint32_t tensor) const;

    // The whole tensor.
    pybind11::object whole(std::uint32_t tensor) const;
    // The tensors by name, in the order given (load): written in batches, the source read in its order by all the
    // model's threads at once.
    pybind11::dict many(const std::vector<std::uint32_t>& tensors) const;
    // The elements `selection` picks (write_element_runs: a remote file sends the bytes of a run of rows, and the
    // blocks that hold a column slice's rows, each once).
    pybind11::object part(std::uint32_t tensor, const Selection& selection) const;

private:
    // The array over the mapped file for elements [first, first + count), when that needs no copy.
    std::optional<pybind11::object> mapped(std::uint32_t tensor, const ArrayPlan& plan, std::uint64_t first,
                                          std::uint64_t count, const std::vector<std::uint64_t>& shape) const;
    // The array over memory the engine wrote, on the device.
    pybind11::object made(const ArrayPlan& plan, const std::vector<std::uint64_t>& shape,
                          const std::shared_ptr<char>& memory) const;
    // The array on the device: the array itself on the CPU, else its copy there.
    pybind11::object on_device(pybind11::object array) const;

    std::shared_ptr<const Engine> model_;
    ArrayMaker maker_;
    std::optional<ValueView> dtype_;
    std::string device_;
};

}  // namespace tensorfs::python
