// tensorfs's Python module (the package's native part, tensorfs._tensorfs; tensorfs/__init__.py re-exports it): a
// second front end on the engine the mount uses, with safetensors' calls. It parses arguments, opens the SOURCE and
// hands arrays back; everything below (sources, formats, decoding, the disk cache) is the engine's.
#include <fnmatch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "array_memory.hpp"
#include "device.hpp"
#include "diff.hpp"
#include "interruptible.hpp"
#include "python_errors.hpp"
#include "python_values.hpp"
#include "read_settings.hpp"
#include "remote/http_client.hpp"
#include "safe_open.hpp"
#include "tensor_reader.hpp"
#include "tensorfs/engine.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

Framework framework_of(const std::string& name) {
    if (const auto framework = framework_named(name)) return *framework;
    throw py::value_error("framework must be 'pt' (or 'torch') or 'np' (or 'numpy'), not '" + name + "'");
}

// dtype=: None, or "f32"/"bf16"/"f16" (also "float32", "bfloat16", "float16", and torch's or numpy's dtypes).
std::optional<ValueView> requested_dtype(const py::handle& dtype) {
    if (dtype.is_none()) return std::nullopt;
    std::string name;
    if (py::isinstance<py::str>(dtype)) {
        name = dtype.cast<std::string>();
    } else if (py::str(dtype.get_type().attr("__module__")).cast<std::string>() == "torch") {
        name = py::str(dtype).cast<std::string>();   // "torch.bfloat16"
        if (name.starts_with("torch.")) name.erase(0, 6);
    } else if (py::module_::import("sys").attr("modules").contains("numpy")) {
        // A numpy dtype or type (numpy.float32), which only a process that imported numpy can hold.
        name = py::str(py::module_::import("numpy").attr("dtype")(dtype).attr("name")).cast<std::string>();
    }
    if (name == "f32" || name == "float32") return ValueView::F32;
    if (name == "bf16" || name == "bfloat16") return ValueView::BF16;
    if (name == "f16" || name == "float16") return ValueView::F16;
    throw py::value_error("dtype must be None, 'f32', 'bf16' or 'f16', not " + std::string(py::repr(dtype)));
}

// SOURCE opened for reading tensors: a folder of several models is refused with the candidates.
std::shared_ptr<const Engine> open_model(const std::string& source, const Settings& settings) {
    auto opened = std::make_shared<std::shared_ptr<const Engine>>();
    run_interruptibly([source, settings, opened](const std::atomic<bool>&) {
        EngineNeeds needs;
        // The arrays hold every byte read: a cache file's pages would be a copy.
        needs.disk_cache_writes_direct = true;
        auto engine = std::make_shared<const Engine>(source, settings, needs);
        engine->require_model("model=PATH");
        *opened = std::move(engine);
    });
    return *opened;
}

std::unique_ptr<SafeOpen> safe_open(const py::handle& source, const std::string& framework,
                                    const py::handle& device, const py::handle& dtype, const py::kwargs& options) {
    // The framework's module is imported by the first call that makes an array (or here, for a device other than the
    // CPU): keys(), metadata(), raw() and get_slice(...).get_shape() need neither numpy nor torch.
    const Framework chosen = framework_of(framework);
    const auto requested = requested_dtype(dtype);
    std::string where = device_named(device, chosen);
    const Settings settings = read_settings(options, "safe_open");
    return std::make_unique<SafeOpen>(open_model(source_text(source), settings), chosen, requested, std::move(where));
}

py::dict load(const py::handle& source, const std::string& framework, const py::handle& device,
              const py::handle& dtype, const py::handle& tensors, const py::kwargs& options) {
    const Framework chosen = framework_of(framework);
    ArrayMaker(chosen).module();   // a ModuleNotFoundError before anything is opened
    const auto requested = requested_dtype(dtype);
    std::string where = device_named(device, chosen);
    const std::string glob = tensors.is_none() ? std::string() : name_from_python(tensors);
    const Settings settings = read_settings(options, "load");
    const auto model = open_model(source_text(source), settings);
    std::vector<std::uint32_t> wanted;
    const auto& catalog = model->catalog();
    for (std::uint32_t i = 0; i < catalog.tensors.size(); ++i) {
        if (glob.empty() || ::fnmatch(glob.c_str(), catalog.tensors[i].name.c_str(), 0) == 0) wanted.push_back(i);
    }
    if (!glob.empty() && wanted.empty()) {
        throw py::key_error("no tensor of " + std::string(py::str(source)) +
                            " matches tensors=" + std::string(py::repr(tensors)));
    }
    return TensorReader(model, chosen, requested, std::move(where)).many(wanted);
}

py::dict info(const py::handle& source, const py::kwargs& options) {
    const Settings settings = read_settings(options, "info");
    const std::string path = source_text(source);
    auto document = std::make_shared<nlohmann::ordered_json>();
    // A folder of several models is described as `tensorfs info --json` describes it: its candidates.
    run_interruptibly(
        [path, settings, document](const std::atomic<bool>&) { *document = Engine(path, settings).info(); });
    return json_to_python(*document);
}

}  // namespace
}  // namespace tensorfs::python

PYBIND11_MODULE(_tensorfs, module) {
    using namespace tensorfs::python;
    // Before any thread starts (libcurl's global setup is not safe to race with one).
    tensorfs::remote::init_http();
    module.doc() = "The native part of the tensorfs package: see help(tensorfs).";
    module.attr("__version__") = TENSORFS_VERSION;
    add_errors(module);
    add_array_types(module);
    // Reads that Ctrl-C left running end before the interpreter tears down what they use.
    py::module_::import("atexit").attr("register")(py::cpp_function(&finish_interrupted_work));

    py::class_<SafeOpen>(module, "SafeOpen", R"doc(A SOURCE opened by tensorfs.safe_open: safetensors' safe_open object.

Use it as a context manager (`with tensorfs.safe_open(...) as f:`), or call close() when done. Any number of
threads may read from one handle at once. After close(), every call raises ValueError, as a closed file does;
arrays already returned stay valid.)doc")
        .def("keys", &SafeOpen::keys, "The tensor names, sorted (as safetensors gives them).")
        .def("offset_keys", &SafeOpen::offset_keys,
             "The tensor names in the order of their bytes in the files: by offset for safetensors (as safetensors "
             "gives them), in the order the file lists them for GGUF and PyTorch checkpoints.")
        .def("metadata", &SafeOpen::metadata, R"doc(The model's metadata as a dict of str to str.

Always "format": "pt" first, as torch's safetensors files have it (loaders check it), then the source's own:
safetensors: the files' __metadata__ (and a sharded index's "metadata"; a "format" of its own stays as it is);
GGUF and PyTorch: the metadata model.json holds, every value as a str (numbers and arrays as JSON text).)doc")
        .def("get_tensor", &SafeOpen::get_tensor, py::arg("name"), R"doc(The tensor `name` as a whole.

A torch.Tensor (framework "pt") on the handle's device, or a numpy.ndarray ("np"). Unknown names raise KeyError,
with the name most likely meant.

Its values are those of the mount's files for the same source: the stored bytes (`raw`) when its dtype is kept,
else `dequant.f32`, `dequant.bf16` or `dequant.f16`. A tensor of a local file whose stored dtype is the one given
comes back with no copy: an array over a copy-on-write mapping of the file. For numpy it is read-only; a torch
tensor is writable, and a write changes this process's copy of those pages only, never the file, and is seen by
later get_tensor calls of the same handle for the same tensor (as with safetensors). Every other tensor is
written once, straight into the array returned, with the GIL released while it is fetched and decoded; Ctrl-C
raises KeyboardInterrupt at once, and the handle stays usable.)doc")
        .def(
            "get_slice",
            [](py::object self, const py::handle& name) {
                const SafeOpen& handle = self.cast<const SafeOpen&>();
                const auto model = handle.model();
                return Slice(self, handle.index_of(*model, name));
            },
            py::arg("name"),
            "A Slice of the tensor `name`: get_shape(), get_dtype(), and [...] to read only a part of it. Unknown "
            "names raise KeyError.")
        .def("raw", &SafeOpen::raw, py::arg("name"),
             "The tensor's stored bytes, as the mount's `raw` file holds them (bytes).")
        .def("files", &SafeOpen::files,
             "The model's files, as info()['files'] lists them: each a dict of 'path' (relative to the SOURCE's "
             "folder) and 'size'.")
        .def("close", &SafeOpen::close, "Closes the handle; arrays already returned stay valid.")
        .def("__enter__",
             [](py::object self) {
                 (void)self.cast<const SafeOpen&>().model();   // ValueError when closed
                 return self;
             })
        .def("__exit__", [](SafeOpen& handle, const py::args&) {
            handle.close();
            return false;
        })
        .def("__repr__", &SafeOpen::repr);

    py::class_<Slice>(module, "Slice", R"doc(A part of a tensor to read: safetensors' PySafeSlice.

slice[key] takes ints, slices (a positive step) and ..., as numpy does, and returns a tensor (or array) of that
part. Only the rows (or runs of elements) it needs are fetched and decoded: of a remote source, exactly their byte
ranges. A part of a local file in its stored dtype is a view of the file with no copy, as get_tensor's.)doc")
        .def("get_shape", &Slice::get_shape, "The tensor's shape, a list of ints.")
        .def("get_dtype", &Slice::get_dtype,
             "The dtype of what [...] and get_tensor give for the handle's framework and dtype, as safetensors "
             "names it ('F32' for a Q4_K weight, 'BF16', 'I64'...). Raises as get_tensor would for a tensor it "
             "cannot give.")
        .def("__getitem__", &Slice::getitem, py::arg("key"));

    module.def("safe_open", &safe_open, py::arg("source"), py::arg("framework") = "pt", py::arg("device") = "cpu",
               py::kw_only(), py::arg("dtype") = py::none(), R"doc(Opens a model checkpoint, as safetensors.safe_open.

source: any SOURCE `tensorfs mount` takes: a .safetensors file, a .safetensors.index.json, a .gguf file (any part of
  a split set), a PyTorch .bin/.pt/.pth (its pickle is never run), a .bin.index.json or a folder holding one of
  those, on the local disk, at an http(s):// URL, on the Hugging Face Hub (hf://ORG/REPO[@REVISION][/PATH],
  $HF_TOKEN) or in S3 (s3://BUCKET/KEY, s3://BUCKET/PREFIX/; keys as the AWS CLI reads them).
framework: "pt" (or "torch") gives torch.Tensors, "np" (or "numpy") numpy.ndarrays. Only that framework is needed,
  when the first array is made: keys(), metadata(), raw(), files() and get_slice(...).get_shape() need neither.
device: where torch tensors go, as safetensors takes it: "cpu", "cuda", "cuda:N", an int N (cuda:N), "mps"...,
  or a torch.device; tensors are moved there with one copy. A device this torch cannot use raises RuntimeError
  here, a name that is no device ValueError. numpy only has "cpu".
dtype: None keeps each tensor's stored dtype where the framework has it (quantized GGUF types and float8 in numpy
  come back as float32); "f32", "bf16" or "f16" convert every floating tensor (quantized ones too) as the mount's
  dequant.* files do, while integers and bools keep theirs (-o export_dtype's rule). Values are never rounded
  unasked: uint16 and uint32 in a torch without them come back as int32 and int64, and a uint64 there raises
  TypeError unless dtype asks for floats. numpy has no bfloat16: a BF16 tensor comes back as float32 with
  dtype=None, and with dtype="bf16" as uint16 holding the bfloat16 bits.
options: mount options that apply to a source, by their mount names: cache_dir, disk_cache_size,
  max_connections, readahead, model (the model of a folder that holds several), cache_size (the memory budget),
  threads (readers at once), and the others `tensorfs mount -o` takes for a source. Unknown names raise TypeError;
  values the mount refuses, ValueError.

Returns a SafeOpen. A source that cannot be read raises tensorfs.Error (an OSError) with the command's message;
one that does not exist, tensorfs.SourceNotFoundError (also a FileNotFoundError).)doc");

    module.def("load", &load, py::arg("source"), py::arg("framework") = "pt", py::arg("device") = "cpu",
               py::kw_only(), py::arg("dtype") = py::none(), py::arg("tensors") = py::none(),
               R"doc(Reads a whole model into a dict.

The dict maps each tensor's name to the tensor, in the source's order; with `tensors`, only the tensors whose names
match that glob (as fnmatch matches). source, framework, device, dtype and options as for safe_open. The source is
read in its order by all the threads and connections a mount would use (threads=, max_connections=), each tensor
written once into its array (or, for a local file in its stored dtype, an array over the file with no copy), with
the GIL released; Ctrl-C raises KeyboardInterrupt at once. Memory holds the returned tensors plus the cache budget
(cache_size=); with a device other than the CPU, a batch of 1 GiB at most on the CPU. A glob that matches nothing
raises KeyError.)doc");

    module.def("info", &info, py::arg("source"), R"doc(What `tensorfs info --json SOURCE` prints, as a dict.

Format, files, tensor count, sizes, parameter count, bits per weight, dtypes, all model metadata. Options as for
safe_open.)doc");

    module.def("diff", &diff, py::arg("a"), py::arg("b"), py::kw_only(), py::arg("names") = "auto",
               py::arg("tensors") = py::none(), R"doc(How far checkpoint b is from checkpoint a, tensor by tensor.

Returns the rows `tensorfs diff --json A B` prints, as dicts: one per pair of tensors (status, names, dtypes,
shapes, differing values, max |a-b|, RMSE, relative RMSE, cosine, SNR, as floats: inf where infinite, nan where
undefined), and the summary last ("kind": "summary"). names: "same" pairs equal names, "gguf" pairs Hugging Face
names with a GGUF's as llama.cpp's converter names them, "auto" picks "gguf" when one side is a GGUF. tensors: a
glob of the names to compare. Options as for safe_open; model=PATH picks that model in both a and b.)doc");

    module.def("release_memory", &release_kept_memory, R"doc(Gives back the memory kept for arrays to come.

The memory of a released array of 4 MiB or more stays with the process, up to 1 GiB, for the next array of the same
size. This unmaps it; returns how many bytes that was.)doc");
}
