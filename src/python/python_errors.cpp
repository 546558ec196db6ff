#include "python_errors.hpp"

#include <array>
#include <string>
#include <string_view>

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// One class per kind of error, under tensorfs.Error; and the builtin OSError subclass each also is, so that code
// that catches FileNotFoundError or TimeoutError catches ours.
struct ErrorClass {
    ErrorKind kind;
    const char* name;     // "tensorfs.SourceNotFoundError"
    PyObject* builtin;    // the second base class, or nullptr
    const char* doc;
    PyObject* made = nullptr;  // created once by add_errors and kept for the life of the process
};

PyObject* error_class = nullptr;

std::array<ErrorClass, 6> kind_classes = {{
    {ErrorKind::InvalidSource, "tensorfs.InvalidSourceError", nullptr,
     "A source that breaks a rule of its format (errno EINVAL), or a folder without one model to read."},
    {ErrorKind::NotFound, "tensorfs.SourceNotFoundError", PyExc_FileNotFoundError,
     "A source, or a file it names (a shard, a split part), that does not exist (errno ENOENT): also a "
     "FileNotFoundError."},
    {ErrorKind::Permission, "tensorfs.AccessDeniedError", PyExc_PermissionError,
     "A file that may not be read, or a server that refused the credentials (errno EACCES): also a "
     "PermissionError."},
    {ErrorKind::Unavailable, "tensorfs.UnavailableError", PyExc_ConnectionError,
     "A server that cannot be reached or kept failing until the deadline (errno EHOSTUNREACH): also a "
     "ConnectionError."},
    {ErrorKind::TimedOut, "tensorfs.TimedOutError", PyExc_TimeoutError,
     "No answer within timeout= (errno ETIMEDOUT): also a TimeoutError."},
    {ErrorKind::Unsupported, "tensorfs.UnsupportedError", nullptr,
     "A valid source in a variant tensorfs does not read, or a tensor without values (errno EOPNOTSUPP)."},
}};

PyObject* class_of(ErrorKind kind) {
    for (const ErrorClass& entry : kind_classes) {
        if (entry.kind == kind) return entry.made;
    }
    return error_class;  // Io: a read that failed
}

// Sets the error of `kind` as pending: str() is `message`, errno, strerror and filename say the kind, the reason and
// the file, as an OSError raised by open() does.
void set_error(ErrorKind kind, const std::string& message, const std::string& reason, const std::string& filename) {
    const py::object error = py::reinterpret_borrow<py::object>(class_of(kind))(message);
    error.attr("errno") = errno_of(kind);
    error.attr("strerror") = reason.empty() ? message : reason;
    error.attr("filename") = filename.empty() ? py::none() : py::object(py::str(filename));
    PyErr_SetObject(class_of(kind), error.ptr());
}

}  // namespace

void add_errors(py::module_& module) {
    error_class = PyErr_NewExceptionWithDoc(
        "tensorfs.Error",
        "A source that cannot be read: it breaks a rule of its format, cannot be found or reached, or a read failed. "
        "The message is what the tensorfs command prints (file, what is wrong, the byte offset); errno, strerror and "
        "filename are set. Each kind has a subclass; a read that failed once the source was open is this class "
        "itself, errno EIO.",
        PyExc_OSError, nullptr);
    if (error_class == nullptr) throw py::error_already_set();
    // OSError's own str() is "[Errno 22] strerror: 'filename'" once errno is set; ours is the message, the line the
    // tensorfs command prints.
    py::handle(error_class).attr("__str__") = py::cpp_function(
        [](py::handle self) {
            const py::tuple args = self.attr("args");
            return args.empty() ? py::str() : py::str(args[0]);
        },
        py::is_method(py::handle(error_class)));
    module.add_object("Error", py::handle(error_class));
    for (ErrorClass& entry : kind_classes) {
        const py::tuple bases = entry.builtin == nullptr
                                    ? py::make_tuple(py::handle(error_class))
                                    : py::make_tuple(py::handle(error_class), py::handle(entry.builtin));
        entry.made = PyErr_NewExceptionWithDoc(entry.name, entry.doc, bases.ptr(), nullptr);
        if (entry.made == nullptr) throw py::error_already_set();
        module.add_object(std::string_view(entry.name).substr(std::string_view("tensorfs.").size()).data(),
                          py::handle(entry.made));
    }

    py::register_exception_translator([](std::exception_ptr thrown) {
        try {
            if (thrown) std::rethrow_exception(thrown);
        } catch (const py::builtin_exception&) {
            throw;  // KeyError, TypeError, ValueError...: pybind11's own translation
        } catch (const SourceError& refused) {
            const std::vector<Problem>& problems = refused.problems();
            const std::string reason = problems.empty() ? std::string() : single_line(problems.front().what);
            const std::string file = problems.empty() ? std::string() : problems.front().file;
            set_error(refused.kind(), refused.summary(), reason, file);
        } catch (const IoError& failed) {
            set_error(failed.kind(), single_line(failed.what()), single_line(failed.reason()), failed.file());
        } catch (const std::runtime_error& failed) {
            // The engine's other refusals (diff's pairing, a row order it cannot restore).
            set_error(ErrorKind::Io, single_line(failed.what()), {}, {});
        }
    });
}

void raise_error(ErrorKind kind, const std::string& message, const std::string& filename) {
    set_error(kind, message, {}, filename);
    throw py::error_already_set();
}

}  // namespace tensorfs::python
