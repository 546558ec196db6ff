// The arrays the module returns, numpy arrays or torch tensors: either allocated, to be written once by the engine,
// or laid over a mapping of the source file (for torch, through torch.from_numpy, which shares the memory).
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

    // A new array of the plan's dtype and `shape`, not initialized, and where its elements go: of a large one, memory
    // of array_memory.hpp (pages a released array had, when there are); of a small one, the framework's own
    // (numpy.empty, torch.empty).
    struct Allocated {
        pybind11::object array;
        void* data;
    };
    Allocated allocate(const ArrayPlan& plan, const std::vector<std::uint64_t>& shape) const;
    // The framework's array over `bytes`, which lie in `memory` and stay valid while the array (or a view of it)
    // lives. Over a mapping of a file (not `writable`): read-only for numpy; writable for torch, which has no
    // read-only tensors (a write changes this process's copy-on-write pages only, never the file).
    pybind11::object over(const ArrayPlan& plan, const std::vector<std::uint64_t>& shape,
                          const std::shared_ptr<char>& memory, const char* bytes, bool writable = false) const;

private:
    Framework framework_;
    pybind11::object torch_;   // None for numpy
};

}  // namespace tensorfs::python
