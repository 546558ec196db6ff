#include "slicing.hpp"

#include <string>

namespace py = pybind11;

namespace tensorfs::python {
namespace {

// One dimension's part: `count` indices from `start`, `step` apart; `kept` false for an int index.
struct Range {
    std::uint64_t start = 0;
    std::uint64_t count = 0;
    std::uint64_t step = 1;
    bool kept = true;

    bool whole(std::uint64_t dim) const { return start == 0 && count == dim && (step == 1 || count <= 1); }
};

Range range_of(const py::handle& index, std::uint64_t dim, std::size_t axis) {
    if (py::isinstance<py::slice>(index)) {
        if (dim > static_cast<std::uint64_t>(PY_SSIZE_T_MAX)) throw py::index_error("the dimension is too large");
        py::ssize_t start = 0, stop = 0, step = 0, length = 0;
        if (!py::reinterpret_borrow<py::slice>(index).compute(static_cast<py::ssize_t>(dim), &start, &stop, &step,
                                                              &length)) {
            throw py::error_already_set();
        }
        if (step <= 0) throw py::value_error("a slice's step must be positive (axis " + std::to_string(axis) + ")");
        return Range{static_cast<std::uint64_t>(start), static_cast<std::uint64_t>(length),
                     static_cast<std::uint64_t>(step), true};
    }
    if (py::isinstance<py::int_>(index) && !py::isinstance<py::bool_>(index)) {
        const auto value = index.cast<long long>();
        const long long size = static_cast<long long>(dim);
        if (value >= size || value < -size) {
            throw py::index_error("index " + std::to_string(value) + " is out of bounds for axis " +
                                  std::to_string(axis) + " with size " + std::to_string(dim));
        }
        return Range{static_cast<std::uint64_t>(value < 0 ? value + size : value), 1, 1, false};
    }
    throw py::type_error("a slice takes ints, slices (with a positive step) and ..., not " +
                         std::string(py::str(index.get_type().attr("__name__"))));
}

// The key as one index per dimension, `...` (or missing trailing ones) filled with whole slices.
std::vector<Range> ranges_of(const std::vector<std::uint64_t>& shape, const py::handle& key) {
    std::vector<py::handle> indices;
    if (py::isinstance<py::tuple>(key)) {
        for (const py::handle item : py::reinterpret_borrow<py::tuple>(key)) indices.push_back(item);
    } else {
        indices.push_back(key);
    }
    std::size_t ellipses = 0;
    for (const py::handle index : indices) ellipses += index.is(py::ellipsis()) ? 1 : 0;
    if (ellipses > 1) throw py::index_error("an index can only have a single ellipsis ('...')");
    if (indices.size() - ellipses > shape.size()) {
        throw py::index_error("too many indices: the tensor has " + std::to_string(shape.size()) + " dimensions, " +
                              std::to_string(indices.size() - ellipses) + " were indexed");
    }
    std::vector<Range> ranges;
    const std::size_t filled = shape.size() - (indices.size() - ellipses);
    for (const py::handle index : indices) {
        if (index.is(py::ellipsis())) {
            for (std::size_t i = 0; i < filled; ++i) ranges.push_back(Range{0, shape[ranges.size()], 1, true});
            continue;
        }
        ranges.push_back(range_of(index, shape[ranges.size()], ranges.size()));
    }
    while (ranges.size() < shape.size()) ranges.push_back(Range{0, shape[ranges.size()], 1, true});
    return ranges;
}

}  // namespace

Selection select(const std::vector<std::uint64_t>& shape, const py::handle& key) {
    const std::vector<Range> ranges = ranges_of(shape, key);
    Selection selection;
    selection.elements = 1;
    for (const Range& range : ranges) {
        if (range.kept) selection.shape.push_back(range.count);
        selection.elements *= range.count;
    }
    if (selection.elements == 0) return selection;

    // Elements per index of each dimension, and the innermost dimension not taken whole: every dimension after it is,
    // so each of its indices (or its whole range, with step 1) is one run.
    const std::size_t n = shape.size();
    std::vector<std::uint64_t> per_index(n, 1);
    for (std::size_t d = n; d-- > 1;) per_index[d - 1] = per_index[d] * shape[d];
    std::size_t cut = n;
    while (cut > 0 && ranges[cut - 1].whole(shape[cut - 1])) --cut;
    if (cut == 0) {
        selection.runs.push_back(ElementRun{0, selection.elements});
        return selection;
    }
    const Range& inner = ranges[cut - 1];
    const std::uint64_t inner_size = per_index[cut - 1];
    // Every combination of the outer indices, in C order (the last one fastest), and the runs at each.
    std::vector<std::uint64_t> counter(cut - 1, 0);
    for (;;) {
        std::uint64_t base = 0;
        for (std::size_t d = 0; d + 1 < cut; ++d) {
            base += (ranges[d].start + counter[d] * ranges[d].step) * per_index[d];
        }
        if (inner.step == 1) {
            selection.runs.push_back(ElementRun{base + inner.start * inner_size, inner.count * inner_size});
        } else {
            selection.runs.push_back(
                ElementRun{base + inner.start * inner_size, inner_size, inner.count, inner.step * inner_size});
        }
        std::size_t d = cut - 1;
        while (d > 0 && ++counter[d - 1] == ranges[d - 1].count) counter[--d] = 0;
        if (d == 0) break;
    }
    return selection;
}

}  // namespace tensorfs::python
