#include "arrays.hpp"

#include <limits>
#include <string>

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// Bytes an array is laid over, and what keeps them: numpy.frombuffer and torch.frombuffer keep a reference to this
// object (the array's base, the tensor's storage) while the array lives.
class HeldMemory {
public:
    HeldMemory(std::shared_ptr<char> owner, const char* bytes, std::size_t size, bool writable)
        : owner_(std::move(owner)), bytes_(bytes), size_(size), writable_(writable) {}

    py::buffer_info buffer() const {
        // Read-only unless writable: numpy then makes a read-only array. The bytes are never written through a
        // read-only buffer.
        return py::buffer_info(const_cast<char*>(bytes_), 1, py::format_descriptor<std::uint8_t>::format(),
                               static_cast<py::ssize_t>(size_), !writable_);
    }

private:
    std::shared_ptr<char> owner_;
    const char* bytes_;
    std::size_t size_;
    bool writable_;
};

py::tuple python_shape(const std::vector<std::uint64_t>& shape) {
    py::tuple dims(shape.size());
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] > static_cast<std::uint64_t>(std::numeric_limits<py::ssize_t>::max())) {
            throw py::value_error("a dimension of " + std::to_string(shape[i]) + " is more than an array can have");
        }
        dims[i] = py::int_(static_cast<py::ssize_t>(shape[i]));
    }
    return dims;
}

// The framework's module, imported now. When it is not installed (not when it fails inside), a ModuleNotFoundError
// that names it, the framework that needs it and the interpreter that lacks it.
py::module_ import_framework(const char* module, const char* framework) {
    try {
        return py::module_::import(module);
    } catch (const py::error_already_set& error) {
        if (!error.matches(PyExc_ModuleNotFoundError)) throw;
        const py::object missing = py::getattr(error.value(), "name", py::none());
        if (missing.is_none() || missing.cast<std::string>() != module) throw;
        const std::string python = py::str(py::module_::import("sys").attr("executable"));
        const std::string message = std::string("framework=\"") + framework + "\" needs " + module +
                                    ", which is not installed for " + python + ": pip install " + module +
                                    " (or tensorfs[" + module + "])";
        PyErr_SetImportErrorSubclass(PyExc_ModuleNotFoundError, py::str(message).ptr(), py::str(module).ptr(),
                                     nullptr);
        throw py::error_already_set();
    }
}

}  // namespace

void add_array_types(py::module_& module) {
    py::class_<HeldMemory>(module, "_HeldMemory", py::buffer_protocol()).def_buffer(&HeldMemory::buffer);
}

const py::object& ArrayMaker::module() const {
    if (!module_) {
        module_ = framework_ == Framework::Torch ? import_framework("torch", "pt") : import_framework("numpy", "np");
    }
    return module_;
}

bool ArrayMaker::torch_has(std::string_view dtype) const {
    return framework_ == Framework::Torch && py::hasattr(module(), std::string(dtype).c_str());
}

std::optional<ArrayPlan> ArrayMaker::plan(const Tensor& tensor, std::optional<ValueView> requested) const {
    return plan_array(tensor, framework_, requested, [this](std::string_view dtype) { return torch_has(dtype); });
}

py::object ArrayMaker::over(const ArrayPlan& plan, const std::vector<std::uint64_t>& shape,
                            const std::shared_ptr<char>& memory, const char* bytes, bool writable) const {
    const py::tuple dims = python_shape(shape);
    std::uint64_t size = plan.item_bytes;
    for (const std::uint64_t dim : shape) size *= dim;
    if (framework_ == Framework::Numpy) {
        const py::object held = py::cast(HeldMemory(memory, bytes, static_cast<std::size_t>(size), writable));
        return module().attr("frombuffer")(held, py::arg("dtype") = plan.numpy_dtype).attr("reshape")(dims);
    }
    const py::object dtype = module().attr(plan.torch_dtype.c_str());
    // torch.frombuffer refuses an empty buffer.
    if (size == 0) return module().attr("empty")(dims, py::arg("dtype") = dtype);
    // Writable: torch has no read-only tensors, and warns about a read-only buffer.
    const py::object held = py::cast(HeldMemory(memory, bytes, static_cast<std::size_t>(size), true));
    return module().attr("frombuffer")(held, py::arg("dtype") = dtype).attr("reshape")(dims);
}

}  // namespace tensorfs::python
