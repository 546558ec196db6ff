// tensorfs.Error (an OSError, with the message the command prints) and a subclass for each kind of error
// (SourceNotFoundError is also a FileNotFoundError, AccessDeniedError a PermissionError...), with errno, filename and
// strerror set; and the translation of the engine's exceptions into them.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "tensorfs/errors.hpp"

namespace tensorfs::python {

// Creates the exception classes in `module` and registers the translation of SourceError, IoError and the other
// std::runtime_errors the engine throws.
void add_errors(pybind11::module_& module);

// Raises the class of `kind` with `message` (for a refusal of the module's own, such as a tensor without values).
[[noreturn]] void raise_error(ErrorKind kind, const std::string& message, const std::string& filename = {});

}  // namespace tensorfs::python
