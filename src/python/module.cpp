// tensorfs's Python module (the package's native part, tensorfs._tensorfs; tensorfs/__init__.py re-exports it): a
// second front end on the engine the mount uses, with safetensors' calls. It parses arguments, opens the SOURCE and
// hands arrays back; everything below (sources, formats, decoding, the disk cache) is the engine's.
#include <fnmatch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "compare/diff_compare.hpp"
#include "compare/diff_pairs.hpp"
#include "compare/diff_rows.hpp"
#include "python_errors.hpp"
#include "python_values.hpp"
#include "read_settings.hpp"
#include "remote/http_client.hpp"
#include "safe_open.hpp"
#include "tensor_reader.hpp"
#include "tensorfs/engine.hpp"
#include "tensorfs/model_figures.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// A SOURCE as the command takes it: a str or a path (os.fspath), as the file system's bytes (os.fsencode).
std::string source_text(const py::handle& source) {
    const py::module_ os = py::module_::import("os");
    const py::object path = os.attr("fspath")(source);
    return os.attr("fsencode")(path).cast<std::string>();
}

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
    const py::gil_scoped_release unlocked;
    EngineNeeds needs;
    needs.disk_cache_writes_direct = true;   // the arrays hold every byte read: a cache file's pages would be a copy
    auto engine = std::make_shared<const Engine>(source, settings, needs);
    engine->require_model("model=PATH");
    return engine;
}

std::unique_ptr<SafeOpen> safe_open(const py::handle& source, const std::string& framework,
                                    const std::string& device, const py::handle& dtype, const py::kwargs& options) {
    // The framework's module is imported by the first call that makes an array: keys(), metadata(), raw() and
    // get_slice(...).get_shape() need neither numpy nor torch.
    const Framework chosen = framework_of(framework);
    const auto requested = requested_dtype(dtype);
    if (chosen == Framework::Numpy && device != "cpu") {
        throw py::value_error("numpy arrays live on the CPU: device must be 'cpu', not '" + device + "'");
    }
    const Settings settings = read_settings(options, "safe_open");
    return std::make_unique<SafeOpen>(open_model(source_text(source), settings), chosen, requested, device);
}

py::dict load(const py::handle& source, const std::string& framework, const py::handle& dtype,
              const py::handle& tensors, const py::kwargs& options) {
    const Framework chosen = framework_of(framework);
    const ArrayMaker imports(chosen);   // a ModuleNotFoundError before anything is opened
    const auto requested = requested_dtype(dtype);
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
    return TensorReader(model, chosen, requested).many(wanted);
}

py::dict info(const py::handle& source, const py::kwargs& options) {
    const Settings settings = read_settings(options, "info");
    const std::string path = source_text(source);
    nlohmann::ordered_json document;
    {
        // A folder of several models is described as `tensorfs info --json` describes it: its candidates.
        const py::gil_scoped_release unlocked;
        document = Engine(path, settings).info();
    }
    return json_to_python(document);
}

compare::NameMode name_mode(const std::string& names) {
    if (names == "same") return compare::NameMode::Same;
    if (names == "gguf") return compare::NameMode::Gguf;
    if (names == "auto") return compare::NameMode::Auto;
    throw py::value_error("names must be 'same', 'gguf' or 'auto', not '" + names + "'");
}

py::list diff(const py::handle& a, const py::handle& b, const std::string& names, const py::handle& tensors,
              const py::kwargs& options) {
    const compare::NameMode mode = name_mode(names);
    const std::string glob = tensors.is_none() ? std::string() : name_from_python(tensors);
    const Settings settings = read_settings(options, "diff");
    const std::string path_a = source_text(a), path_b = source_text(b);
    std::unique_ptr<compare::DiffSide> side_a, side_b;
    compare::Pairing pairing;
    {
        const py::gil_scoped_release unlocked;
        // As the command does: each side keeps half of the cache budget in decoded chunks.
        // model=PATH picks the same model path in both, as `tensorfs diff --model PATH` does.
        const std::uint64_t half = settings.decoded_budget(false) / 2;
        side_a = std::make_unique<compare::DiffSide>(path_a, settings, half, "model=PATH");
        side_b = std::make_unique<compare::DiffSide>(path_b, settings, half, "model=PATH");
        pairing = compare::pair_tensors(side_a->catalog(), side_b->catalog(), mode, glob);
    }
    if (!glob.empty() && pairing.pairs.empty()) {
        // As load() says it of one source.
        throw py::key_error("no tensor of " + path_a + " or " + path_b + " matches tensors=" + glob);
    }
    compare::DiffReport report{*side_a, *side_b, pairing.mode, {}};
    report.results.reserve(pairing.pairs.size());
    for (const compare::TensorPair& pair : pairing.pairs) {
        {
            const py::gil_scoped_release unlocked;
            report.results.push_back(compare::compare_pair(*side_a, *side_b, pair, [](std::uint64_t) {}));
        }
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    py::list rows;
    for (const compare::PairResult& result : report.results) rows.append(json_to_python(pair_json(report, result)));
    rows.append(json_to_python(summary_json(report, summarize(report))));
    return rows;
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

    py::class_<SafeOpen>(module, "SafeOpen", R"doc(A SOURCE opened by tensorfs.safe_open: safetensors' safe_open object.

Use it as a context manager (`with tensorfs.safe_open(...) as f:`), or call close() when done. Any number of
threads may read from one handle at once. After close(), every call raises ValueError, as a closed file does;
arrays already returned stay valid.)doc")
        .def("keys", &SafeOpen::keys, "The tensor names, in the order `tensorfs ls SOURCE` lists them.")
        .def("metadata", &SafeOpen::metadata, R"doc(The model's metadata as a dict of str to str, or None without any.

safetensors: the files' __metadata__ (and a sharded index's "metadata"), as safetensors gives it. GGUF and
PyTorch: the metadata model.json holds, every value as a str (numbers and arrays as JSON text).)doc")
        .def("get_tensor", &SafeOpen::get_tensor, py::arg("name"), R"doc(The tensor `name` as a whole.

A torch.Tensor (framework "pt") or a numpy.ndarray ("np"). Unknown names raise KeyError.

Its values are those of the mount's files for the same source: the stored bytes (`raw`) when its dtype is kept,
else `dequant.f32`, `dequant.bf16` or `dequant.f16`. A tensor of a local file whose stored dtype is the one given
comes back with no copy: an array over a copy-on-write mapping of the file. For numpy it is read-only; a torch
tensor is writable, and a write changes this process's copy of those pages only, never the file, and is seen by
later get_tensor calls of the same handle for the same tensor (as with safetensors). Every other tensor is
written once, straight into the array returned, with the GIL released while it is fetched and decoded.)doc")
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
             "What `tensorfs ls --files SOURCE` lists: the side files (config.json, tokenizer files...) and then "
             "the source's own files under 'source/', each a dict of 'path' and 'size'.")
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
             "The tensor's stored dtype as safetensors names it ('BF16', 'F32', 'I64'...), or ggml's name of a "
             "quantized type ('Q4_K', 'IQ2_XXS'...).")
        .def("__getitem__", &Slice::getitem, py::arg("key"));

    module.def("safe_open", &safe_open, py::arg("source"), py::arg("framework") = "pt", py::arg("device") = "cpu",
               py::kw_only(), py::arg("dtype") = py::none(), R"doc(Opens a model checkpoint, as safetensors.safe_open.

source: any SOURCE `tensorfs mount` takes: a .safetensors file, a .safetensors.index.json, a .gguf file (any part of
  a split set), a PyTorch .bin/.pt/.pth (its pickle is never run), a .bin.index.json or a folder holding one of
  those, on the local disk, at an http(s):// URL, on the Hugging Face Hub (hf://ORG/REPO[@REVISION][/PATH],
  $HF_TOKEN) or in S3 (s3://BUCKET/KEY, s3://BUCKET/PREFIX/; keys as the AWS CLI reads them).
framework: "pt" (or "torch") gives torch.Tensors, "np" (or "numpy") numpy.ndarrays. Only that framework is needed,
  when the first array is made: keys(), metadata(), raw(), files() and get_slice(...).get_shape() need neither.
device: where torch tensors go ("cpu", "cuda:0"...); numpy only has "cpu".
dtype: None keeps each tensor's stored dtype where the framework has it (quantized GGUF types, float8 in numpy,
  and torch's missing dtypes come back as float32); "f32", "bf16" or "f16" convert every floating tensor (quantized
  ones too) as the mount's dequant.* files do, while integers and bools keep theirs where the framework has them
  (-o export_dtype's rule). numpy has no bfloat16: a BF16 tensor comes back as float32 with dtype=None, and with
  dtype="bf16" as uint16 holding the bfloat16 bits.
options: mount options that apply to a source, by their mount names: cache_dir, disk_cache_size,
  max_connections, readahead, model (the model of a folder that holds several), cache_size (the memory budget),
  threads (readers at once), and the others `tensorfs mount -o` takes for a source. Unknown names raise TypeError;
  values the mount refuses, ValueError.

Returns a SafeOpen. A source that cannot be read raises tensorfs.Error (an OSError) with the command's message;
one that does not exist, tensorfs.SourceNotFoundError (also a FileNotFoundError).)doc");

    module.def("load", &load, py::arg("source"), py::arg("framework") = "pt", py::kw_only(),
               py::arg("dtype") = py::none(), py::arg("tensors") = py::none(), R"doc(Reads a whole model into a dict.

The dict maps each tensor's name to the tensor, in the source's order; with `tensors`, only the tensors whose names
match that glob (as fnmatch matches). source, framework, dtype and options as for safe_open. The source is read in
its order by all the threads and connections a mount would use (threads=, max_connections=), each tensor written
once into its array (or, for a local file in its stored dtype, an array over the file with no copy), with the GIL
released. Memory holds the returned tensors plus the cache budget (cache_size=). A glob that matches nothing raises
KeyError.)doc");

    module.def("info", &info, py::arg("source"), R"doc(What `tensorfs info --json SOURCE` prints, as a dict.

Format, files, tensor count, sizes, parameter count, bits per weight, dtypes, all model metadata. Options as for
safe_open.)doc");

    module.def("diff", &diff, py::arg("a"), py::arg("b"), py::kw_only(), py::arg("names") = "auto",
               py::arg("tensors") = py::none(), R"doc(How far checkpoint b is from checkpoint a, tensor by tensor.

Returns the rows `tensorfs diff --json A B` prints, as dicts: one per pair of tensors (status, names, dtypes,
shapes, differing values, max |a-b|, RMSE, relative RMSE, cosine, SNR; infinite figures as "inf", undefined ones
as None), and the summary last ("kind": "summary"). names: "same" pairs equal names, "gguf" pairs Hugging Face
names with a GGUF's as llama.cpp's converter names them, "auto" picks "gguf" when one side is a GGUF. tensors: a
glob of the names to compare. Options as for safe_open; model=PATH picks that model in both a and b.)doc");
}
