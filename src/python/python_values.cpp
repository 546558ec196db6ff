#include "python_values.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

py::str decoded(const std::string& text, const char* errors) {
    PyObject* str = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), errors);
    if (str == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(str);
}

}  // namespace

py::str name_to_python(const std::string& name) { return decoded(name, "surrogateescape"); }

std::string name_from_python(const py::handle& name) {
    if (py::isinstance<py::bytes>(name)) return name.cast<std::string>();
    if (!py::isinstance<py::str>(name)) {
        throw py::type_error("a tensor name is a str, not " + std::string(py::str(name.get_type().attr("__name__"))));
    }
    PyObject* bytes = PyUnicode_AsEncodedString(name.ptr(), "utf-8", "surrogateescape");
    if (bytes == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::bytes>(bytes).cast<std::string>();
}

std::string source_text(const py::handle& source) {
    const py::module_ os = py::module_::import("os");
    const py::object path = os.attr("fspath")(source);
    return os.attr("fsencode")(path).cast<std::string>();
}

py::object json_to_python(const nlohmann::ordered_json& value) {
    switch (value.type()) {
        case nlohmann::ordered_json::value_t::object: {
            py::dict dict;
            for (const auto& [key, item] : value.items()) dict[decoded(key, "replace")] = json_to_python(item);
            return dict;
        }
        case nlohmann::ordered_json::value_t::array: {
            py::list list(value.size());
            for (std::size_t i = 0; i < value.size(); ++i) list[i] = json_to_python(value[i]);
            return list;
        }
        case nlohmann::ordered_json::value_t::string: return decoded(value.get_ref<const std::string&>(), "replace");
        case nlohmann::ordered_json::value_t::boolean: return py::bool_(value.get<bool>());
        case nlohmann::ordered_json::value_t::number_unsigned: return py::int_(value.get<std::uint64_t>());
        case nlohmann::ordered_json::value_t::number_integer: return py::int_(value.get<std::int64_t>());
        case nlohmann::ordered_json::value_t::number_float: return py::float_(value.get<double>());
        default: return py::none();
    }
}

}  // namespace tensorfs::python
