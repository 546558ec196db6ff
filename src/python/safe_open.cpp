#include "safe_open.hpp"

#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

#include "array_memory.hpp"
#include "interruptible.hpp"
#include "python_values.hpp"
#include "tensorfs/errors.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// A metadata value as safetensors gives them, a string: strings as they are, anything else as compact JSON.
std::string metadata_text(const nlohmann::ordered_json& value) {
    if (value.is_string()) return value.get<std::string>();
    return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

py::list names_of(const Catalog& catalog, const std::vector<std::uint32_t>& order) {
    py::list names;
    for (const std::uint32_t tensor : order) names.append(name_to_python(catalog.tensors[tensor].name));
    return names;
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
    const std::string wanted = name_from_python(name);
    if (const auto index = model.find(wanted)) return *index;
    const std::string meant = model.nearest_name(wanted);
    throw py::key_error(single_line(model.source()) + ": no tensor named '" + single_line(wanted) + "'" +
                        (meant.empty() ? "" : "; did you mean '" + single_line(meant) + "'?"));
}

TensorReader SafeOpen::reader() const { return TensorReader(model(), framework_, dtype_, device_); }

py::list SafeOpen::keys() const {
    const auto opened = model();
    const Catalog& catalog = opened->catalog();
    std::vector<std::uint32_t> order(catalog.tensors.size());
    std::iota(order.begin(), order.end(), 0);
    // By their bytes, as safetensors sorts its Rust strings: for UTF-8 the order of code points, as Python's sorted().
    std::sort(order.begin(), order.end(),
              [&](std::uint32_t a, std::uint32_t b) { return catalog.tensors[a].name < catalog.tensors[b].name; });
    return names_of(catalog, order);
}

py::list SafeOpen::offset_keys() const {
    const auto opened = model();
    const Catalog& catalog = opened->catalog();
    std::vector<std::uint32_t> order(catalog.tensors.size());
    std::iota(order.begin(), order.end(), 0);
    // A safetensors header lists its tensors in any order (sorted by name, as safetensors writes them); GGUF and
    // PyTorch checkpoints list theirs in an order of their own, which the catalog keeps.
    if (catalog.format == "safetensors") {
        std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
            const Tensor &x = catalog.tensors[a], &y = catalog.tensors[b];
            return x.file != y.file ? x.file < y.file : x.offset < y.offset;
        });
    }
    return names_of(catalog, order);
}

py::dict SafeOpen::metadata() const {
    const auto opened = model();
    const nlohmann::ordered_json& metadata = opened->catalog().metadata;
    // What torch's safetensors writers put in __metadata__, which loaders check ("pt": tensors for torch), first;
    // then the source's own metadata, whose "format" (a safetensors file's "tf", "np") stays as the file has it.
    py::dict texts;
    texts["format"] = "pt";
    for (const auto& [key, value] : metadata.items()) texts[name_to_python(key)] = name_to_python(metadata_text(value));
    return texts;
}

py::object SafeOpen::get_tensor(const py::handle& name) const {
    const TensorReader reader = this->reader();
    return reader.whole(index_of(reader.model(), name));
}

py::bytes SafeOpen::raw(const py::handle& name) const {
    const auto opened = model();
    const std::uint32_t index = index_of(*opened, name);
    const std::uint64_t nbytes = opened->catalog().tensors[index].nbytes;
    auto bytes = std::make_shared<std::shared_ptr<char>>();
    run_interruptibly(
        [opened, index, nbytes, bytes](const std::atomic<bool>&) {
            *bytes = array_memory(nbytes);
            const Tensor& tensor = opened->catalog().tensors[index];
            if (nbytes > 0) opened->files().read_of_tensor(tensor, tensor.offset, nbytes, bytes->get());
        },
        brief(*opened, nbytes));
    return py::bytes(bytes->get(), static_cast<py::ssize_t>(nbytes));
}

py::list SafeOpen::files() const {
    const auto opened = model();
    // As model.json lists them (info()["files"]): the model's own files, no side file, no request.
    py::list files;
    for (const SourceFile& file : opened->catalog().files) {
        files.append(json_to_python({{"path", file.display}, {"size", file.size}}));
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

std::string Slice::get_dtype() const { return array_dtype_name(handle().reader().plan(tensor_)); }

py::object Slice::getitem(const py::handle& key) const {
    const TensorReader reader = handle().reader();
    const Selection selection = select(reader.model().catalog().tensors[tensor_].shape, key);
    return reader.part(tensor_, selection);
}

}  // namespace tensorfs::python
