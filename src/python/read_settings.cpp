#include "read_settings.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// The value as text: a str as it is, a number in decimal, a path by os.fspath.
std::string option_text(const std::string& name, const py::handle& value) {
    if (py::isinstance<py::bool_>(value) || value.is_none()) {
        throw py::type_error(name + "= takes a value (a str, a number or a path), not " +
                             std::string(py::str(value)));
    }
    if (py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value)) return py::str(value);
    if (py::isinstance<py::str>(value)) return value.cast<std::string>();
    if (py::hasattr(value, "__fspath__")) {
        const py::object path = py::module_::import("os").attr("fspath")(value);
        if (py::isinstance<py::str>(path)) return path.cast<std::string>();
    }
    throw py::type_error(name + "= takes a str, a number or a path, not " +
                         std::string(py::str(value.get_type().attr("__name__"))));
}

}  // namespace

Settings read_settings(const py::kwargs& options, const std::string& function) {
    Settings settings;
    for (const auto& [key, value] : options) {
        const std::string name = py::str(key);
        const OptionInfo* option = option_named(name);
        if (option == nullptr) {
            throw py::type_error(function + "() got an unknown option '" + name +
                                 "' (it takes the options of a source: see tensorfs --help)");
        }
        if (option->use != OptionUse::Source) {
            throw py::type_error(function + "() got '" + name + "', an option that means nothing without a mount");
        }
        const TakenSetting taken = take_setting(name, option_text(name, value), settings);
        if (taken.outcome == SettingOutcome::Refused) throw py::value_error(taken.message);
    }
    return settings;
}

}  // namespace tensorfs::python
