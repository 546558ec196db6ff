#include "tensorfs/stored_blocks.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace tensorfs {
namespace {

// Elements closer than this in the raw bytes are read together, gap included: one read of a few KiB costs less
// than two reads.
constexpr std::uint64_t kGapBytes = 4 << 10;
// The longest single read.
constexpr std::uint64_t kLongestRead = 1 << 20;

// One element to gather: where it lies in the raw bytes and where it goes, in elements.
struct Placement {
    std::uint64_t position;
    std::uint64_t out;
};

// A part of a C-order range of elements that is a box: dimensions before `dim` fixed at `start`, `dim` over
// [start[dim], start[dim] + extent), the dimensions after it whole.
struct Box {
    std::vector<std::uint64_t> start;
    std::uint64_t first;  // its first element in C order
    std::size_t dim;
    std::uint64_t extent;
};

// Elements per index of each dimension of a C-order array (at least one dimension).
std::vector<std::uint64_t> c_order_steps(const std::vector<std::uint64_t>& shape) {
    std::vector<std::uint64_t> step(shape.size(), 1);
    for (std::size_t d = shape.size() - 1; d-- > 0;) step[d] = step[d + 1] * shape[d + 1];
    return step;
}

// Splits [first, first + count) of a C-order array of `shape` into boxes (at most two per dimension).
std::vector<Box> boxes_of(const std::vector<std::uint64_t>& shape, std::uint64_t first, std::uint64_t count) {
    const std::size_t n = shape.size();
    const std::vector<std::uint64_t> step = c_order_steps(shape);
    std::vector<Box> boxes;
    for (std::uint64_t at = first, end = first + count; at < end;) {
        std::vector<std::uint64_t> index(n);
        for (std::size_t d = 0; d < n; ++d) index[d] = at / step[d] % shape[d];
        // The outermost dimension from which `at` starts a whole block that fits.
        std::size_t dim = n - 1;
        for (std::size_t d = 0; d < n; ++d) {
            const bool aligned = at % step[d] == 0;
            if (aligned && step[d] <= end - at) {
                dim = d;
                break;
            }
        }
        const std::uint64_t extent = std::min((end - at) / step[dim], shape[dim] - index[dim]);
        boxes.push_back(Box{index, at, dim, extent});
        at += extent * step[dim];
    }
    return boxes;
}

// The elements of a box with their places, in the order of their position in the raw bytes when the strides
// allow it: dimensions by stride, largest outermost.
void place_box(const std::vector<std::uint64_t>& shape, const std::vector<std::uint64_t>& stride, const Box& box,
               std::uint64_t out_start, std::vector<Placement>& placements) {
    const std::size_t n = shape.size();
    const std::vector<std::uint64_t> step = c_order_steps(shape);
    std::uint64_t position = 0;
    for (std::size_t d = 0; d < n; ++d) position += box.start[d] * stride[d];

    struct Axis {
        std::uint64_t extent, stride, step;
    };
    std::vector<Axis> axes;
    for (std::size_t d = box.dim; d < n; ++d) {
        const std::uint64_t extent = d == box.dim ? box.extent : shape[d];
        if (extent > 1) axes.push_back(Axis{extent, stride[d], step[d]});
    }
    std::stable_sort(axes.begin(), axes.end(), [](const Axis& a, const Axis& b) { return a.stride > b.stride; });

    std::vector<std::uint64_t> counter(axes.size(), 0);
    std::uint64_t out = out_start;
    for (;;) {
        placements.push_back(Placement{position, out});
        std::size_t k = axes.size();
        while (k > 0) {
            Axis& axis = axes[k - 1];
            position += axis.stride;
            out += axis.step;
            if (++counter[k - 1] < axis.extent) break;
            position -= axis.extent * axis.stride;
            out -= axis.extent * axis.step;
            counter[k - 1] = 0;
            --k;
        }
        if (k == 0) return;
    }
}

template <std::size_t kBytes>
void scatter(const std::uint8_t* run, std::uint64_t run_start, const Placement* begin, const Placement* end,
             std::size_t element_bytes, std::uint8_t* dst) {
    const std::size_t size = kBytes == 0 ? element_bytes : kBytes;
    for (const Placement* p = begin; p != end; ++p) {
        std::memcpy(dst + p->out * size, run + (p->position - run_start) * size, size);
    }
}

// Reads the placements (sorted by position) in runs of nearby elements and copies each element to its place.
void read_runs(const std::vector<Placement>& placements, std::size_t element_bytes, const ReadRaw& read,
               std::uint8_t* dst) {
    thread_local std::vector<std::uint8_t> run;
    const std::uint64_t gap = std::max<std::uint64_t>(1, kGapBytes / element_bytes);
    const std::uint64_t longest = std::max<std::uint64_t>(1, kLongestRead / element_bytes);
    for (std::size_t begin = 0; begin < placements.size();) {
        const std::uint64_t start = placements[begin].position;
        std::uint64_t end = start + 1;  // one past the last element of the run
        std::size_t next = begin + 1;
        while (next < placements.size() && placements[next].position <= end + gap &&
               placements[next].position + 1 - start <= longest) {
            end = std::max(end, placements[next].position + 1);
            ++next;
        }
        run.resize((end - start) * element_bytes);
        read(start * element_bytes, run.size(), run.data());
        const Placement* first = placements.data() + begin;
        const Placement* last = placements.data() + next;
        switch (element_bytes) {
            case 1: scatter<1>(run.data(), start, first, last, element_bytes, dst); break;
            case 2: scatter<2>(run.data(), start, first, last, element_bytes, dst); break;
            case 4: scatter<4>(run.data(), start, first, last, element_bytes, dst); break;
            case 8: scatter<8>(run.data(), start, first, last, element_bytes, dst); break;
            default: scatter<0>(run.data(), start, first, last, element_bytes, dst); break;
        }
        begin = next;
    }
}

}  // namespace

void gather_strided(const std::vector<std::uint64_t>& shape, const std::vector<std::uint64_t>& stride,
                    std::size_t element_bytes, std::uint64_t first, std::uint64_t count, const ReadRaw& read,
                    std::uint8_t* dst) {
    if (count == 0 || shape.empty()) {
        if (count > 0) read(0, element_bytes, dst);  // a scalar: its one element
        return;
    }
    thread_local std::vector<Placement> placements;
    for (const Box& box : boxes_of(shape, first, count)) {
        placements.clear();
        place_box(shape, stride, box, box.first - first, placements);
        const auto by_position = [](const Placement& a, const Placement& b) { return a.position < b.position; };
        if (!std::is_sorted(placements.begin(), placements.end(), by_position)) {
            std::sort(placements.begin(), placements.end(), by_position);
        }
        read_runs(placements, element_bytes, read, dst);
    }
}

void read_stored_blocks(const SourceFiles& files, const Tensor& tensor, std::uint64_t first_block,
                        std::uint64_t blocks, std::uint8_t* dst) {
    const std::uint64_t block_bytes = tensor.type->block_bytes;
    if (!tensor.strided()) return files.read_exact(tensor.file, tensor.offset + first_block * block_bytes,
                                                   static_cast<std::size_t>(blocks * block_bytes), dst);
    // Strided views are PyTorch tensors, whose blocks are single elements.
    const ReadRaw read = [&](std::uint64_t offset, std::size_t length, void* into) {
        files.read_exact(tensor.file, tensor.offset + offset, length, into);
    };
    gather_strided(tensor.shape, tensor.stride, static_cast<std::size_t>(block_bytes), first_block, blocks, read, dst);
}

}  // namespace tensorfs
