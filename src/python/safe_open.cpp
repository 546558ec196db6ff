#include "safe_open.hpp"

#include <nlohmann/json.hpp>

#include "python_values.hpp"
#include "tensorfs/json_files.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// A metadata value as safetensors gives them, a string: strings as they are, anything else as compact JSON.
std::string metadata_text(const nlohmann::ordered_json& value) {
    if (value.is_string()) return value.get<std::string>();
    return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

SafeOpen::SafeOpen(std::shared_ptr<const Engine> model, Framework framework, std::optional<ValueView> dtype,
                   std::string device)
    : model_(std::move(model)), framework_(framework), dtype_(dtype), device_(std::move(device)) {}

std::shared_ptr<const Engine> SafeOpen::model() const {
    const std::lock_guard lock(mutex_);
    if (!model_) throw py::value_error("I/O operation on a closed tensorfs.safe_open handle");
    return model_;
}

std::uint32_t SafeOpen::index_of(const Engine& model, const py::handle& name) const {
    const auto index = model.find(name_from_python(name));
    if (!index) throw py::key_error(py::repr(name));
    return *index;
}

TensorReader SafeOpen::reader() const { return TensorReader(model(), framework_, dtype_); }

py::object SafeOpen::on_device(py::object tensor) const {
    if (device_ == "cpu") return tensor;
    return tensor.attr("to")(device_);
}

py::list SafeOpen::keys() const {
    const auto opened = model();
    py::list names;
    for (const Tensor& tensor : opened->catalog().tensors) names.append(name_to_python(tensor.name));
    return names;
}

py::object SafeOpen::metadata() const {
    const auto opened = model();
    const nlohmann::ordered_json& metadata = opened->catalog().metadata;
    // safetensors gives None for a file without __metadata__.
    if (metadata.empty()) return py::none();
    py::dict texts;
    for (const auto& [key, value] : metadata.items()) texts[name_to_python(key)] = name_to_python(metadata_text(value));
    return texts;
}

py::object SafeOpen::get_tensor(const py::handle& name) const {
    const TensorReader reader = this->reader();
    return on_device(reader.whole(index_of(reader.model(), name)));
}

py::bytes SafeOpen::raw(const py::handle& name) const {
    const auto opened = model();
    const Tensor& tensor = opened->catalog().tensors[index_of(*opened, name)];
    // A bytes object of the right size, written once in place while the GIL is released.
    PyObject* bytes = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(tensor.nbytes));
    if (bytes == nullptr) throw py::error_already_set();
    py::bytes result = py::reinterpret_steal<py::bytes>(bytes);
    char* out = PyBytes_AS_STRING(bytes);
    {
        const py::gil_scoped_release unlocked;
        if (tensor.nbytes > 0) opened->files().read_of_tensor(tensor, tensor.offset, tensor.nbytes, out);
    }
    return result;
}

py::list SafeOpen::files() const {
    const auto opened = model();
    const nlohmann::ordered_json listing = folder_files_json(opened->folder());
    py::list files;
    for (const char* part : {"side_files", "source"}) {
        for (const auto& file : listing[part]) files.append(json_to_python(file));
    }
    return files;
}

void SafeOpen::close() {
    const std::lock_guard lock(mutex_);
    model_.reset();
}

std::string SafeOpen::repr() const {
    const std::lock_guard lock(mutex_);
    if (!model_) return "<tensorfs.safe_open (closed)>";
    return "<tensorfs.safe_open " + std::string(py::repr(name_to_python(model_->source()))) + ": " +
           std::to_string(model_->catalog().tensors.size()) + " tensors, " + model_->catalog().format + ">";
}

Slice::Slice(py::object handle, std::uint32_t tensor) : handle_(std::move(handle)), tensor_(tensor) {}

py::list Slice::get_shape() const {
    const auto opened = handle().model();
    py::list shape;
    for (const std::uint64_t dim : opened->catalog().tensors[tensor_].shape) shape.append(dim);
    return shape;
}

std::string Slice::get_dtype() const { return stored_dtype_name(handle().model()->catalog().tensors[tensor_]); }

py::object Slice::getitem(const py::handle& key) const {
    const TensorReader reader = handle().reader();
    const Selection selection = select(reader.model().catalog().tensors[tensor_].shape, key);
    return handle().on_device(reader.part(tensor_, selection));
}

}  // namespace tensorfs::python
