#include "python_errors.hpp"

#include <string>
#include <string_view>

#include "tensorfs/errors.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// Created once by add_errors and kept for the life of the process, as extension modules keep their classes.
PyObject* error_class = nullptr;
PyObject* not_found_class = nullptr;

// The command's lines without its "tensorfs: " prefix, which the exception's class already says.
std::string message_of(const InvalidSource& invalid) {
    constexpr std::string_view kPrefix = "tensorfs: ";
    std::string message;
    for (const Problem& problem : invalid.problems()) {
        std::string line = problem.line();
        if (line.starts_with(kPrefix)) line.erase(0, kPrefix.size());
        message += (message.empty() ? "" : "\n") + line;
    }
    return message.empty() ? std::string(invalid.what()) : message;
}

}  // namespace

void add_errors(py::module_& module) {
    error_class = PyErr_NewExceptionWithDoc(
        "tensorfs.Error",
        "A source that cannot be read: it breaks a rule of its format, cannot be reached, or a read failed. The "
        "message is what the tensorfs command prints (file, what is wrong, the byte offset).",
        PyExc_OSError, nullptr);
    if (error_class == nullptr) throw py::error_already_set();
    const py::tuple bases = py::make_tuple(py::handle(error_class), py::handle(PyExc_FileNotFoundError));
    not_found_class = PyErr_NewExceptionWithDoc(
        "tensorfs.SourceNotFoundError",
        "A source, or a file it names (a shard, a split part), that does not exist: a tensorfs.Error and a "
        "FileNotFoundError.",
        bases.ptr(), nullptr);
    if (not_found_class == nullptr) throw py::error_already_set();
    module.add_object("Error", py::handle(error_class));
    module.add_object("SourceNotFoundError", py::handle(not_found_class));

    py::register_exception_translator([](std::exception_ptr thrown) {
        try {
            if (thrown) std::rethrow_exception(thrown);
        } catch (const py::builtin_exception&) {
            throw;  // KeyError, TypeError, ValueError...: pybind11's own translation
        } catch (const InvalidSource& invalid) {
            PyErr_SetString(invalid.missing() ? not_found_class : error_class, message_of(invalid).c_str());
        } catch (const IoError& failed) {
            PyErr_SetString(error_class, failed.what());
        } catch (const std::runtime_error& failed) {
            // The engine's other refusals (diff's pairing, a row order it cannot restore).
            PyErr_SetString(error_class, failed.what());
        }
    });
}

void raise_error(const std::string& message) {
    PyErr_SetString(error_class, message.c_str());
    throw py::error_already_set();
}

}  // namespace tensorfs::python
