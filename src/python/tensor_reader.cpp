#include "tensor_reader.hpp"

#include <algorithm>
#include <cstring>

#include "python_errors.hpp"
#include "python_values.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/in_parallel.hpp"
#include "tensorfs/quantized_values.hpp"
#include "tensorfs/tensor_values.hpp"

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// Output bytes load() writes between two returns to Python (to check for Ctrl-C): enough for every thread to stream.
constexpr std::uint64_t kBatchBytes = std::uint64_t{1} << 30;

std::uint64_t output_bytes(const Tensor& tensor, const ArrayPlan& plan) { return tensor.elements * plan.item_bytes; }

}  // namespace

TensorReader::TensorReader(std::shared_ptr<const Engine> model, Framework framework,
                           std::optional<ValueView> dtype)
    : model_(std::move(model)), maker_(framework), dtype_(dtype) {}

ArrayPlan TensorReader::plan(std::uint32_t tensor) const {
    const Tensor& t = model_->catalog().tensors[tensor];
    if (auto plan = maker_.plan(t, dtype_)) return *plan;
    if (t.quantization) raise_error(ErrorKind::Unsupported, single_line(t.name) + ": " + single_line(why_no_values(t)));
    raise_error(ErrorKind::Unsupported,
                single_line(t.name) + ": its dtype " + std::string(t.type->name) + " has no float32 values and no " +
                    (maker_.framework() == Framework::Torch ? "torch" : "numpy") + " dtype; raw() gives its bytes");
}

std::optional<py::object> TensorReader::mapped(std::uint32_t tensor, const ArrayPlan& plan, std::uint64_t first,
                                              std::uint64_t count, const std::vector<std::uint64_t>& shape) const {
    const Tensor& t = model_->catalog().tensors[tensor];
    if (plan.view || !t.raw_in_c_order || count == 0) return std::nullopt;
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

py::object TensorReader::whole(std::uint32_t tensor) const {
    const ArrayPlan plan = this->plan(tensor);
    const Tensor& t = model_->catalog().tensors[tensor];
    if (auto array = mapped(tensor, plan, 0, t.elements, t.shape)) return *array;
    ArrayMaker::Allocated array = maker_.allocate(plan, t.shape);
    const TensorOutput output{tensor, plan.view, array.data};
    {
        const py::gil_scoped_release unlocked;
        write_tensors(model_->catalog(), model_->files(), {&output, 1}, model_->threads());
    }
    return array.array;
}

py::dict TensorReader::many(const std::vector<std::uint32_t>& tensors) const {
    std::vector<std::pair<std::uint32_t, py::object>> arrays;
    arrays.reserve(tensors.size());
    std::vector<TensorOutput> batch;
    std::uint64_t batch_bytes = 0;
    const auto write_batch = [&] {
        {
            const py::gil_scoped_release unlocked;
            write_tensors(model_->catalog(), model_->files(), batch, model_->threads());
        }
        batch.clear();
        batch_bytes = 0;
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    };
    for (const std::uint32_t tensor : tensors) {
        const ArrayPlan plan = this->plan(tensor);
        const Tensor& t = model_->catalog().tensors[tensor];
        if (auto array = mapped(tensor, plan, 0, t.elements, t.shape)) {
            arrays.emplace_back(tensor, std::move(*array));
            continue;
        }
        ArrayMaker::Allocated array = maker_.allocate(plan, t.shape);
        batch.push_back(TensorOutput{tensor, plan.view, array.data});
        batch_bytes += output_bytes(t, plan);
        arrays.emplace_back(tensor, std::move(array.array));
        if (batch_bytes >= kBatchBytes) write_batch();
    }
    if (!batch.empty()) write_batch();
    py::dict result;
    for (auto& [tensor, array] : arrays) result[name_to_python(model_->catalog().tensors[tensor].name)] = array;
    return result;
}

void TensorReader::write_quantized_part(const Tensor& t, const ArrayPlan& plan, const Selection& selection,
                                        char* out) const {
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
    const py::gil_scoped_release unlocked;
    in_parallel(batches.size(), model_->threads(), [&](std::size_t index) {
        const Batch& batch = batches[index];
        thread_local std::vector<char> decoded;
        decoded.resize(batch.rows * row * plan.item_bytes);
        write_quantized_rows(model_->files(), t, batch.first_row, batch.rows, *plan.view, decoded.data());
        for (std::size_t i = batch.first_run; i < batch.end_run; ++i) {
            const std::uint64_t at = runs[i].first - batch.first_row * row;
            std::memcpy(runs[i].out, decoded.data() + at * plan.item_bytes, runs[i].count * plan.item_bytes);
        }
    });
}

py::object TensorReader::part(std::uint32_t tensor, const Selection& selection) const {
    const ArrayPlan plan = this->plan(tensor);
    if (selection.runs.size() == 1 && selection.runs.front().repeat == 1) {
        const ElementRun& run = selection.runs.front();
        if (auto array = mapped(tensor, plan, run.first, run.count, selection.shape)) return *array;
    }
    ArrayMaker::Allocated array = maker_.allocate(plan, selection.shape);
    const Tensor& t = model_->catalog().tensors[tensor];
    if (t.quantization) {
        write_quantized_part(t, plan, selection, static_cast<char*>(array.data));
        return array.array;
    }
    {
        const py::gil_scoped_release unlocked;
        write_element_runs(model_->files(), t, plan.view, selection.runs, array.data, model_->threads());
    }
    return array.array;
}

}  // namespace tensorfs::python
