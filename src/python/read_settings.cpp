#include "read_settings.hpp"

#include <string_view>

#include "fuse/mount_options.hpp"
#include "tensorfs/dequant_reader.hpp"
#include "tensorfs/mount.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// The value as the text `-o name=VALUE` would carry: a str as it is, a number in decimal, a path by os.fspath.
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

// Options the parser takes that a source without a mount has no use for: model.safetensors' dtypes, and the words of
// mount(8) lines that change nothing.
bool means_nothing_without_a_mount(std::string_view name) {
    return name == "export_dtype" || name == "comment" || name.starts_with("x-") || name.starts_with("X-");
}

}  // namespace

std::uint64_t ReadSettings::budget() const { return cache_size != 0 ? cache_size : kDefaultCacheBudget; }

ReadSettings read_settings(const py::kwargs& options, const std::string& function) {
    MountOptions parsed;
    for (const auto& [key, value] : options) {
        const std::string name = py::str(key);
        const std::string text = option_text(name, value);
        // `-o` lists are split at commas: a value holding one would be read as two options.
        if (text.find(',') != std::string::npos) throw py::value_error(name + "= cannot hold a comma: '" + text + "'");
        const std::size_t libfuse_options = parsed.fuse_options.size();
        const std::string error = take_option_list(name + "=" + text, parsed);
        if (error.starts_with("unknown mount option")) {
            throw py::type_error(function + "() got an unknown option '" + name +
                                 "' (it takes the mount options of a source: see tensorfs --help)");
        }
        if (!error.empty()) throw py::value_error(error);
        if (parsed.fuse_options.size() != libfuse_options || means_nothing_without_a_mount(name)) {
            throw py::type_error(function + "() got '" + name + "', a mount option that means nothing without a mount");
        }
    }
    ReadSettings settings;
    settings.source_options = parsed.source_options;
    settings.model = parsed.model;
    settings.cache_size = parsed.cache_size;
    settings.threads = parsed.threads;
    return settings;
}

}  // namespace tensorfs::python
