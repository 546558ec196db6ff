// The keyword options of safe_open, load, info and diff: tensorfs's options that mean something without a mount,
// by their names, parsed as every front end parses them (settings.hpp).
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "tensorfs/settings.hpp"

namespace tensorfs::python {

// Raises TypeError for a name that is no option of tensorfs, or one that means nothing without a mount
// (export_dtype, the CSI plugin's), and ValueError for a value a mount would refuse, with the mount's message.
// `function` names the caller in messages ("safe_open").
Settings read_settings(const pybind11::kwargs& options, const std::string& function);

}  // namespace tensorfs::python
