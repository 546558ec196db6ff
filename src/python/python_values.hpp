// Values crossing into Python and back: tensor names (which may hold any bytes: GGUF strings are not checked for
// UTF-8), SOURCEs, and the engine's JSON documents (model.json, diff's rows).
#pragma once

#include <string>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

namespace tensorfs::python {

// A tensor name as a str: UTF-8, with bytes that are not UTF-8 as lone surrogates (surrogateescape), so that any
// name comes back unchanged through name_from_python.
pybind11::str name_to_python(const std::string& name);
// A str (encoded back with surrogateescape) or bytes. Raises TypeError for anything else.
std::string name_from_python(const pybind11::handle& name);

// A SOURCE as the command takes it: a str or a path (os.fspath), as the file system's bytes (os.fsencode).
std::string source_text(const pybind11::handle& source);

// Objects as dicts (in their order), arrays as lists; strings that are not UTF-8 get U+FFFD for the bad bytes, as
// the JSON files of a mount do.
pybind11::object json_to_python(const nlohmann::ordered_json& value);

}  // namespace tensorfs::python
