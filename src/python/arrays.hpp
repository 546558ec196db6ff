// The arrays the module returns, numpy arrays or torch tensors, laid over memory the module holds: a mapping of the
// source file, or array_memory.hpp's memory that the engine wrote. Both frameworks
// are reached through their Python calls and the buffer protocol only (numpy.frombuffer, torch.frombuffer), never
// pybind11's numpy API: torch tensors need no numpy, and the module works with numpy 1 and 2 alike (pybind11 before
// 2.12 reads numpy 1's array descriptors, which numpy 2 changed).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <pybind11/pybind11.h>

#include "array_plan.hpp"

namespace tensorfs::python {

// The types the arrays need in the module (the memory torch.frombuffer and numpy.frombuffer lay arrays over):
// called once when it is made.
void add_array_types(pybind11::module_& module);

class ArrayMaker {
public:
    explicit ArrayMaker(Framework framework) : framework_(framework) {}

    // The framework's module, numpy for Framework::Numpy and torch for Framework::Torch (only that one), imported at
    // the first call: what needs no array, such as a numpy handle's get_dtype(), imports nothing. A missing one
    // raises ModuleNotFoundError, naming it and how to install it.
    const pybind11::object& module() const;

    Framework framework() const { return framework_; }
    // Whether torch has a dtype of this name (torch 1.13 has no uint16, float8_e4m3fn...).
    bool torch_has(std::string_view dtype) const;
    // plan_array for this framework.
    std::optional<ArrayPlan> plan(const Tensor& tensor, std::optional<ValueView> requested) const;

    // The framework's array over `bytes`, which lie in `memory` and stay valid while the array (or a view of it)
    // lives. Over a mapping of a file (not `writable`): read-only for numpy; writable for torch, which has no
    // read-only tensors (a write changes this process's copy-on-write pages only, never the file). Over
    // array_memory.hpp's memory: `writable`.
    pybind11::object over(const ArrayPlan& plan, const std::vector<std::uint64_t>& shape,
                          const std::shared_ptr<char>& memory, const char* bytes, bool writable = false) const;

private:
    Framework framework_;
    mutable pybind11::object module_;   // numpy or torch, once imported
};

}  // namespace tensorfs::python
