// tensorfs.Error (an OSError, with the message the command prints) and tensorfs.SourceNotFoundError (also a
// FileNotFoundError), and the translation of the engine's exceptions into them.
#pragma once

#include <pybind11/pybind11.h>

namespace tensorfs::python {

// Creates both exception classes in `module` and registers the translation of InvalidSource, IoError and the other
// std::runtime_errors the engine throws.
void add_errors(pybind11::module_& module);

// Raises tensorfs.Error with `message` (for a refusal of the module's own, such as a folder of several models).
[[noreturn]] void raise_error(const std::string& message);

}  // namespace tensorfs::python
