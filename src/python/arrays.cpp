#include "arrays.hpp"

#include <limits>
#include <string>

#include "array_memory.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

std::vector<py::ssize_t> numpy_shape(const std::vector<std::uint64_t>& shape) {
    std::vector<py::ssize_t> dims;
    dims.reserve(shape.size());
    for (const std::uint64_t dim : shape) {
        if (dim > static_cast<std::uint64_t>(std::numeric_limits<py::ssize_t>::max())) {
            throw py::value_error("a dimension of " + std::to_string(dim) + " is more than an array can have");
        }
        dims.push_back(static_cast<py::ssize_t>(dim));
    }
    return dims;
}

}  // namespace

ArrayMaker::ArrayMaker(Framework framework) : framework_(framework) {
    py::module_::import("numpy");
    if (framework == Framework::Torch) torch_ = py::module_::import("torch");
}

bool ArrayMaker::torch_has(std::string_view dtype) const {
    return !torch_.is_none() && py::hasattr(torch_, std::string(dtype).c_str());
}

std::optional<ArrayPlan> ArrayMaker::plan(const Tensor& tensor, std::optional<ValueView> requested) const {
    return plan_array(tensor, framework_, requested, [this](std::string_view dtype) { return torch_has(dtype); });
}

ArrayMaker::Allocated ArrayMaker::allocate(const ArrayPlan& plan, const std::vector<std::uint64_t>& shape) const {
    const std::vector<py::ssize_t> dims = numpy_shape(shape);
    std::uint64_t bytes = plan.item_bytes;
    for (const std::uint64_t dim : shape) bytes *= dim;
    if (bytes >= kLargeArray) {
        if (const std::shared_ptr<char> memory = array_memory(static_cast<std::size_t>(bytes))) {
            py::object array = over(plan, shape, memory, memory.get(), true);
            return {std::move(array), memory.get()};
        }
    }
    if (framework_ == Framework::Numpy) {
        py::array array(py::dtype(plan.numpy_dtype), dims);
        void* data = array.mutable_data();
        return {std::move(array), data};
    }
    py::tuple size(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i) size[i] = dims[i];
    py::object tensor = torch_.attr("empty")(size, py::arg("dtype") = torch_.attr(plan.torch_dtype.c_str()));
    void* data = reinterpret_cast<void*>(tensor.attr("data_ptr")().cast<std::uintptr_t>());
    return {std::move(tensor), data};
}

py::object ArrayMaker::over(const ArrayPlan& plan, const std::vector<std::uint64_t>& shape,
                            const std::shared_ptr<char>& memory, const char* bytes, bool writable) const {
    // The capsule owns a reference to the memory: it goes when the last array over it does.
    const py::capsule keeper(new std::shared_ptr<char>(memory),
                             [](void* kept) { delete static_cast<std::shared_ptr<char>*>(kept); });
    py::array array(py::dtype(plan.numpy_dtype), numpy_shape(shape), {}, bytes, keeper);
    if (framework_ == Framework::Numpy) {
        if (!writable) array.attr("setflags")(py::arg("write") = false);
        return array;
    }
    py::object tensor = torch_.attr("from_numpy")(array);
    const py::object dtype = torch_.attr(plan.torch_dtype.c_str());
    if (!dtype.is(tensor.attr("dtype"))) tensor = tensor.attr("view")(dtype);
    return tensor;
}

}  // namespace tensorfs::python
