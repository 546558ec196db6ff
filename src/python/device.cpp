#include "device.hpp"

#include <array>
#include <charconv>
#include <optional>
#include <string_view>

#include "arrays.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// The kinds of device safetensors names (its Device enum), each with an index but mps, which has only one.
constexpr std::array<std::string_view, 9> kKinds{"cpu", "cuda", "musa", "mps", "npu", "xpu", "xla", "mlu", "hpu"};

// "KIND" or "KIND:N" as torch names the device ("cuda" is cuda:0), or nullopt when `name` is none.
std::optional<std::string> parsed(std::string_view name) {
    const std::string_view kind = name.substr(0, name.find(':'));
    bool known = false;
    for (const std::string_view one : kKinds) known = known || one == kind;
    if (!known) return std::nullopt;
    const bool single = kind == "cpu" || kind == "mps";
    if (kind.size() == name.size()) return single ? std::string(kind) : std::string(kind) + ":0";
    const std::string_view digits = name.substr(kind.size() + 1);
    unsigned index = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    if (single) return index == 0 ? std::optional<std::string>(kind) : std::nullopt;
    return std::string(kind) + ":" + std::to_string(index);
}

bool is_torch_device(const py::handle& device) {
    const py::handle type = device.get_type();
    return py::str(type.attr("__module__")).cast<std::string>() == "torch" &&
           py::str(type.attr("__name__")).cast<std::string>() == "device";
}

// Raises RuntimeError when this torch cannot make a tensor on `device`: the check torch itself makes at the first
// tensor, made now.
void check_usable(const std::string& device) {
    const py::object torch = ArrayMaker(Framework::Torch).module();   // ModuleNotFoundError naming torch if missing
    try {
        torch.attr("empty")(0, py::arg("device") = device);
    } catch (py::error_already_set& error) {
        if (!error.matches(PyExc_Exception)) throw;
        std::string reason = py::str(error.value());
        reason = reason.substr(0, reason.find('\n'));
        // RuntimeError, as torch raises for a CUDA it cannot reach; torch's own error is its __cause__.
        const std::string message = "device '" + device + "' cannot be used by this torch: " + reason;
        py::raise_from(error, PyExc_RuntimeError, message.c_str());
        throw py::error_already_set();
    }
}

}  // namespace

std::string device_named(const py::handle& device, Framework framework) {
    std::optional<std::string> name;
    std::string given;
    if (py::isinstance<py::str>(device)) {
        given = device.cast<std::string>();
        name = parsed(given);
    } else if (py::isinstance<py::int_>(device) && !py::isinstance<py::bool_>(device)) {
        given = py::str(device);
        if (device.cast<long long>() >= 0) name = "cuda:" + given;
    } else if (is_torch_device(device)) {
        given = py::str(device);
        name = parsed(given);
    } else {
        throw py::type_error("device is a str, an int or a torch.device, not " +
                             std::string(py::str(device.get_type().attr("__name__"))));
    }
    if (!name) {
        throw py::value_error("device '" + given + "' is invalid: it is 'cpu', 'cuda', 'cuda:N', an int N, 'mps', " +
                              "'xpu:N', 'npu:N', 'hpu', 'mlu:N', 'musa:N', 'xla:N', or a torch.device of these");
    }
    if (*name == "cpu") return *name;
    if (framework == Framework::Numpy) {
        throw py::value_error("numpy arrays live on the CPU: device must be 'cpu', not '" + given + "'");
    }
    check_usable(*name);
    return *name;
}

}  // namespace tensorfs::python
