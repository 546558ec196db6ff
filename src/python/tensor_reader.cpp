#include "tensor_reader.hpp"

#include <algorithm>
#include <cstring>

#include "array_memory.hpp"
#include "interruptible.hpp"
#include "python_errors.hpp"
#include "python_values.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/in_parallel.hpp"
#include "tensorfs/quantized_values.hpp"
#include "tensorfs/safetensors_dtypes.hpp"
#include "tensorfs/tensor_values.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// Output bytes load() writes between two returns to Python, where that batch's arrays are made (and moved to the
// device): enough for every thread to stream.
constexpr std::uint64_t kBatchBytes = std::uint64_t{1} << 30;

// A whole tensor the engine writes, and the memory it goes to (allocated by the work that writes it).
struct Output {
    std::uint32_t tensor;
    ArrayPlan plan;
    std::uint64_t elements;
    std::shared_ptr<char> memory;
};

// Where `elements` elements written as `plan` says go in `memory`: its start, or for a widened array its end, from
// which they are widened.
char* written_at(const ArrayPlan& plan, std::uint64_t elements, char* memory) {
    return memory + elements * (plan.item_bytes - plan.written_bytes());
}

// The work of whole() and many(): the outputs' memory, their tensors written into it, and widened where planned.
void write_outputs(const Engine& model, std::vector<Output>& outputs, const std::atomic<bool>& stop) {
    std::vector<TensorOutput> writes;
    writes.reserve(outputs.size());
    for (Output& output : outputs) {
        if (stop) return;
        output.memory = array_memory(output.elements * output.plan.item_bytes);
        writes.push_back(TensorOutput{output.tensor, output.plan.view,
                                      written_at(output.plan, output.elements, output.memory.get())});
    }
    write_tensors(model.catalog(), model.files(), writes, model.threads(), &stop);
    for (const Output& output : outputs) {
        if (stop) return;
        if (output.plan.widened_from != 0) {
            widen_in_place(output.memory.get(), output.elements, output.plan.widened_from);
        }
    }
}

// part() of a quantized weight: its touched rows decoded in batches, the selected elements copied to `out`.
void write_quantized_part(const Engine& model, const Tensor& t, const ArrayPlan& plan, const Selection& selection,
                          char* out, const std::atomic<bool>& stop) {
    // A quantized weight's values come whole rows at a time (a scheme stored transposed gathers each row from
    // across its parts), so the rows the selection touches are decoded in runs of rows and its elements copied out.
    struct Run {
        std::uint64_t first;
        std::uint64_t count;
        char* out;
    };
    const std::uint64_t row = row_elements(t);
    const std::uint64_t rows_together = rows_at_once(t, *plan.view);
    // The selection's runs, cut where a batch of rows_at_once rows would end.
    std::vector<Run> runs;
    const std::uint64_t border = rows_together * row;
    for (const ElementRun& run : selection.runs) {
        for (std::uint64_t r = 0; r < run.repeat; ++r) {
            const std::uint64_t begin = run.first + r * run.stride, end = begin + run.count;
            for (std::uint64_t at = begin; at < end;) {
                const std::uint64_t to = std::min(end, (at / border + 1) * border);
                runs.push_back(Run{at, to - at, out});
                out += (to - at) * plan.item_bytes;
                at = to;
            }
        }
    }
    // Batches of touched rows that follow each other, with the runs they hold (runs come in the tensor's order).
    struct Batch {
        std::uint64_t first_row;
        std::uint64_t rows;
        std::size_t first_run;
        std::size_t end_run;
    };
    std::vector<Batch> batches;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const std::uint64_t first_row = runs[i].first / row, last_row = (runs[i].first + runs[i].count - 1) / row;
        if (!batches.empty() && first_row <= batches.back().first_row + batches.back().rows &&
            last_row + 1 - batches.back().first_row <= rows_together) {
            Batch& batch = batches.back();
            batch.rows = std::max(batch.rows, last_row + 1 - batch.first_row);
            batch.end_run = i + 1;
        } else {
            batches.push_back(Batch{first_row, last_row + 1 - first_row, i, i + 1});
        }
    }
    in_parallel(batches.size(), model.threads(), [&](std::size_t index) {
        if (stop) return;
        const Batch& batch = batches[index];
        thread_local std::vector<char> decoded;
        decoded.resize(batch.rows * row * plan.item_bytes);
        write_quantized_rows(model.files(), t, batch.first_row, batch.rows, *plan.view, decoded.data());
        for (std::size_t i = batch.first_run; i < batch.end_run; ++i) {
            const std::uint64_t at = runs[i].first - batch.first_row * row;
            std::memcpy(runs[i].out, decoded.data() + at * plan.item_bytes, runs[i].count * plan.item_bytes);
        }
    });
}

// The work of part(): the selected elements written to `out` in the result's order.
void write_part(const Engine& model, const Tensor& t, const ArrayPlan& plan, const Selection& selection, char* out,
                const std::atomic<bool>& stop) {
    if (t.quantization) return write_quantized_part(model, t, plan, selection, out, stop);
    write_element_runs(model.files(), t, plan.view, selection.runs, out, model.threads(), &stop);
}

}  // namespace

TensorReader::TensorReader(std::shared_ptr<const Engine> model, Framework framework,
                           std::optional<ValueView> dtype, std::string device)
    : model_(std::move(model)), maker_(framework), dtype_(dtype), device_(std::move(device)) {}

ArrayPlan TensorReader::plan(std::uint32_t tensor) const {
    const Tensor& t = model_->catalog().tensors[tensor];
    if (auto plan = maker_.plan(t, dtype_)) return *plan;
    if (t.quantization) raise_error(ErrorKind::Unsupported, single_line(t.name) + ": " + single_line(why_no_values(t)));
    const std::string stored = stored_dtype_name(t);
    if (is_integer_dtype(stored)) {
        // Only a uint64 in a torch without uint64 (numpy has every integer dtype): never rounded unasked.
        throw py::type_error(single_line(t.name) + ": its " + stored + " values have no exact dtype in this torch " +
                             "(int64 and float32 cannot hold them all): dtype=\"f32\" gives them rounded, " +
                             "framework=\"np\" exact, raw() their bytes");
    }
    raise_error(ErrorKind::Unsupported,
                single_line(t.name) + ": its dtype " + stored + " has no float32 values and no " +
                    (maker_.framework() == Framework::Torch ? "torch" : "numpy") + " dtype; raw() gives its bytes");
}

std::optional<py::object> TensorReader::mapped(std::uint32_t tensor, const ArrayPlan& plan, std::uint64_t first,
                                              std::uint64_t count, const std::vector<std::uint64_t>& shape) const {
    const Tensor& t = model_->catalog().tensors[tensor];
    if (plan.view || plan.widened_from != 0 || !t.raw_in_c_order || count == 0) return std::nullopt;
    const std::shared_ptr<char> mapping = model_->mapping(t.file);
    if (!mapping) return std::nullopt;
    const std::uint64_t offset = t.offset + first * plan.item_bytes;
    const std::size_t length = static_cast<std::size_t>(count * plan.item_bytes);
    // Throws IoError when the file is now shorter than these bytes: touching them would raise SIGBUS.
    (void)model_->files().mapped(t.file, offset, length);
    const char* bytes = mapping.get() + offset;
    // numpy and torch want each element at an address that is a multiple of its size.
    if (reinterpret_cast<std::uintptr_t>(bytes) % plan.item_bytes != 0) return std::nullopt;
    return maker_.over(plan, shape, mapping, bytes);
}

py::object TensorReader::made(const ArrayPlan& plan, const std::vector<std::uint64_t>& shape,
                              const std::shared_ptr<char>& memory) const {
    return on_device(maker_.over(plan, shape, memory, memory.get(), true));
}

py::object TensorReader::on_device(py::object array) const {
    if (device_ == "cpu") return array;
    return array.attr("to")(device_);
}

bool brief(const Engine& model, std::uint64_t bytes) { return !model.remote() && bytes < kLargeArray; }

py::object TensorReader::whole(std::uint32_t tensor) const {
    maker_.module();   // a ModuleNotFoundError before any work
    const ArrayPlan plan = this->plan(tensor);
    const Tensor& t = model_->catalog().tensors[tensor];
    if (auto array = mapped(tensor, plan, 0, t.elements, t.shape)) return on_device(std::move(*array));
    auto outputs = std::make_shared<std::vector<Output>>(1, Output{tensor, plan, t.elements, nullptr});
    run_interruptibly(
        [model = model_, outputs](const std::atomic<bool>& stop) { write_outputs(*model, *outputs, stop); },
        brief(*model_, t.elements * plan.item_bytes));
    return made(plan, t.shape, outputs->front().memory);
}

py::dict TensorReader::many(const std::vector<std::uint32_t>& tensors) const {
    maker_.module();
    const Catalog& catalog = model_->catalog();
    std::vector<py::object> arrays(tensors.size());
    auto batch = std::make_shared<std::vector<Output>>();
    std::vector<std::size_t> places;   // the index in `arrays` of each output of the batch
    std::uint64_t batch_bytes = 0;
    const auto write_batch = [&] {
        run_interruptibly(
            [model = model_, batch](const std::atomic<bool>& stop) { write_outputs(*model, *batch, stop); });
        for (std::size_t i = 0; i < batch->size(); ++i) {
            const Output& output = (*batch)[i];
            arrays[places[i]] = made(output.plan, catalog.tensors[output.tensor].shape, output.memory);
        }
        batch = std::make_shared<std::vector<Output>>();
        places.clear();
        batch_bytes = 0;
    };
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        // Tensors laid over the file, and copies to the device, take no wait of their own: Ctrl-C is looked for here.
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        const ArrayPlan plan = this->plan(tensors[i]);
        const Tensor& t = catalog.tensors[tensors[i]];
        if (auto array = mapped(tensors[i], plan, 0, t.elements, t.shape)) {
            arrays[i] = on_device(std::move(*array));
            continue;
        }
        batch->push_back(Output{tensors[i], plan, t.elements, nullptr});
        places.push_back(i);
        batch_bytes += t.elements * plan.item_bytes;
        if (batch_bytes >= kBatchBytes) write_batch();
    }
    if (!batch->empty()) write_batch();
    py::dict result;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        result[name_to_python(catalog.tensors[tensors[i]].name)] = arrays[i];
    }
    return result;
}

py::object TensorReader::part(std::uint32_t tensor, const Selection& selection) const {
    maker_.module();
    const ArrayPlan plan = this->plan(tensor);
    if (selection.runs.size() == 1 && selection.runs.front().repeat == 1) {
        const ElementRun& run = selection.runs.front();
        if (auto array = mapped(tensor, plan, run.first, run.count, selection.shape)) return on_device(*array);
    }
    const std::uint64_t bytes = selection.elements * plan.item_bytes;
    auto memory = std::make_shared<std::shared_ptr<char>>();
    run_interruptibly(
        [model = model_, tensor, plan, selection, bytes, memory](const std::atomic<bool>& stop) {
            *memory = array_memory(bytes);
            char* out = written_at(plan, selection.elements, memory->get());
            write_part(*model, model->catalog().tensors[tensor], plan, selection, out, stop);
            if (plan.widened_from != 0 && !stop) widen_in_place(memory->get(), selection.elements, plan.widened_from);
        },
        brief(*model_, bytes));
    return made(plan, selection.shape, *memory);
}

}  // namespace tensorfs::python
