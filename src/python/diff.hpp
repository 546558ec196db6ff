// tensorfs.diff: `tensorfs diff --json A B`'s rows as dicts, with its figures as floats.
#pragma once

#include <pybind11/pybind11.h>

namespace tensorfs::python {

// One dict per pair of tensors, then the summary. `names`: "same", "gguf" or "auto" (ValueError else); `tensors`: a
// glob of the names to compare, or None; `options`: the sources' options (model=PATH picks that model in both).
pybind11::list diff(const pybind11::handle& a, const pybind11::handle& b, const std::string& names,
                    const pybind11::handle& tensors, const pybind11::kwargs& options);

}  // namespace tensorfs::python
