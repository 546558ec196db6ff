// The arrays the module returns: numpy arrays, or torch tensors made from them with torch.from_numpy (which shares
// their memory). Either allocated, to be written once by the engine, or laid over a mapping of the source file.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "array_plan.hpp"

namespace tensorfs::python {

class ArrayMaker {
public:
    // Imports numpy, and torch for Framework::Torch (an ImportError when it is missing).
    explicit ArrayMaker(Framework framework);

    Framework framework() const { return framework_; }
    // Whether torch has a dtype of this name (torch 1.13 has no uint16, float8_e4m3fn...).
    bool torch_has(std::string_view dtype) const;
    // plan_array for this framework.
    std::optional<ArrayPlan> plan(const Tensor& tensor, std::optional<ValueView> requested) const;

    // A new numpy array of the plan's numpy dtype and `shape`, not initialized (its pages are untouched until
    // written).
    pybind11::array allocate(const ArrayPlan& plan, const std::vector<std::uint64_t>& shape) const;
    // A numpy array over `bytes`, which lie in `mapping` and stay valid while the array (or a view of it) lives.
    // Read-only for numpy; writable for torch, which has no read-only tensors: a write changes this process's
    // copy-on-write pages only, never the file.
    pybind11::array over(const ArrayPlan& plan, const std::vector<std::uint64_t>& shape,
                         const std::shared_ptr<char>& mapping, const char* bytes) const;
    // What the caller gets: the array itself, or torch.from_numpy(array) viewed as the plan's torch dtype.
    pybind11::object finish(pybind11::array array, const ArrayPlan& plan) const;

private:
    Framework framework_;
    pybind11::object torch_;   // None for numpy
};

}  // namespace tensorfs::python
