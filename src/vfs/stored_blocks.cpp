// The gather of a strided view's elements, in three steps for each part of the range:
//   1. the C-order range is cut into boxes (index ranges per dimension), each box's dimensions are ordered by
//      stride (largest outermost: the order of the elements in the raw bytes, for the layouts torch makes), and the
//      box is cut into slabs of at most kSlabElements along its outermost dimensions;
//   2. a slab's elements are read in that order, nearby ones in one read, into a staging buffer;
//   3. the staging buffer is copied to the elements' C-order places in tiles, so that neither side jumps far for
//      each element (a transposed matrix is a transposition: element by element it would miss the caches).
#include "stored_blocks.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace tensorfs {
namespace {

// Elements staged at once: the staging buffer and the list of places stay in the CPU's caches.
constexpr std::uint64_t kSlabElements = 1 << 16;
// Side of the tiles of step 3, in elements.
constexpr std::uint64_t kTile = 32;

// A part of a C-order range of elements that is a box: dimensions before `dim` fixed at `start`, `dim` over
// [start[dim], start[dim] + extent), the dimensions after it whole.
struct Box {
    std::vector<std::uint64_t> start;
    std::uint64_t first;  // its first element in C order
    std::size_t dim;
    std::uint64_t extent;
};

// One dimension of a box: its extent, its step in the raw bytes (the view's stride) and in the C-order output,
// both in elements.
struct Axis {
    std::uint64_t extent;
    std::uint64_t stride;
    std::uint64_t step;
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

// Calls visit(position, out) for every element of the (sub)box of `axes` starting at `position` and `out`, in
// the axes' order, the last one fastest.
template <typename Visit>
void for_each_element(const std::vector<Axis>& axes, std::uint64_t position, std::uint64_t out, Visit&& visit) {
    std::vector<std::uint64_t> counter(axes.size(), 0);
    for (;;) {
        visit(position, out);
        std::size_t k = axes.size();
        while (k > 0) {
            const Axis& axis = axes[k - 1];
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
inline void copy_element(std::uint8_t* dst, const std::uint8_t* src, std::size_t bytes) {
    std::memcpy(dst, src, kBytes == 0 ? bytes : kBytes);
}

// Step 2: reads the elements at `positions` (the slab's elements in staging order) into `staging`, in runs of
// nearby elements taken in the order of their positions.
template <std::size_t kBytes>
void stage(const std::vector<std::uint64_t>& positions, std::size_t element, const ReadRaw& read,
           std::uint8_t* staging) {
    thread_local std::vector<std::uint32_t> order;  // staging indices by position, when positions are not in order
    thread_local std::vector<std::uint8_t> run;
    const bool sorted = std::is_sorted(positions.begin(), positions.end());
    if (!sorted) {
        order.resize(positions.size());
        std::iota(order.begin(), order.end(), 0u);
        std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
            return positions[a] < positions[b];
        });
    }
    const auto index = [&](std::size_t i) -> std::size_t { return sorted ? i : order[i]; };
    const std::uint64_t gap = std::max<std::uint64_t>(1, kNearbyBytes / element);
    const std::uint64_t longest = std::max<std::uint64_t>(1, kLongestGatherRead / element);
    for (std::size_t begin = 0; begin < positions.size();) {
        const std::uint64_t start = positions[index(begin)];
        std::uint64_t end = start + 1;  // one past the last element of the run
        std::size_t next = begin + 1;
        for (; next < positions.size(); ++next) {
            const std::uint64_t position = positions[index(next)];
            if (position > end + gap || position + 1 - start > longest) break;
            end = std::max(end, position + 1);
        }
        run.resize((end - start) * element);
        read(start * element, run.size(), run.data());
        for (std::size_t i = begin; i < next; ++i) {
            const std::size_t k = index(i);
            copy_element<kBytes>(staging + k * element, run.data() + (positions[k] - start) * element, element);
        }
        begin = next;
    }
}

// Step 3: copies the staged elements (in the axes' order, the last axis fastest) to their C-order places at `dst`.
// The last axis is the staging's contiguous one; the axis of smallest step is the output's: when they differ
// (a transposition), their plane is copied in tiles.
template <std::size_t kBytes>
void unstage(const std::vector<Axis>& axes, const std::uint8_t* staging, std::size_t element, std::uint8_t* dst) {
    const std::size_t n = axes.size();
    std::vector<std::uint64_t> staged(n, 1);  // staging steps, in elements
    for (std::size_t k = n - 1; k-- > 0;) staged[k] = staged[k + 1] * axes[k + 1].extent;
    const std::size_t u = n - 1;
    std::size_t v = u;
    for (std::size_t k = 0; k < n; ++k) {
        if (axes[k].step < axes[v].step) v = k;
    }
    // The other axes, walked one element at a time; the staging index rides as the "position".
    std::vector<Axis> outer;
    for (std::size_t k = 0; k < n; ++k) {
        if (k != u && k != v) outer.push_back(Axis{axes[k].extent, staged[k], axes[k].step});
    }
    const Axis& last = axes[u];
    for_each_element(outer, 0, 0, [&](std::uint64_t from, std::uint64_t to) {
        if (v == u) {
            for (std::uint64_t i = 0; i < last.extent; ++i) {
                copy_element<kBytes>(dst + (to + i * last.step) * element, staging + (from + i) * element, element);
            }
            return;
        }
        const Axis& across = axes[v];
        for (std::uint64_t v0 = 0; v0 < across.extent; v0 += kTile) {
            const std::uint64_t v1 = std::min(across.extent, v0 + kTile);
            for (std::uint64_t u0 = 0; u0 < last.extent; u0 += kTile) {
                const std::uint64_t u1 = std::min(last.extent, u0 + kTile);
                for (std::uint64_t i = u0; i < u1; ++i) {
                    for (std::uint64_t j = v0; j < v1; ++j) {
                        copy_element<kBytes>(dst + (to + i * last.step + j * across.step) * element,
                                             staging + (from + i + j * staged[v]) * element, element);
                    }
                }
            }
        }
    });
}

template <std::size_t kBytes>
void gather_box(const std::vector<std::uint64_t>& shape, const std::vector<std::uint64_t>& stride, const Box& box,
                std::uint64_t out_start, std::size_t element, const ReadRaw& read, std::uint8_t* dst) {
    const std::size_t n = shape.size();
    const std::vector<std::uint64_t> step = c_order_steps(shape);
    std::uint64_t position = 0;
    for (std::size_t d = 0; d < n; ++d) position += box.start[d] * stride[d];
    std::vector<Axis> axes;
    for (std::size_t d = box.dim; d < n; ++d) {
        const std::uint64_t extent = d == box.dim ? box.extent : shape[d];
        if (extent > 1) axes.push_back(Axis{extent, stride[d], step[d]});
    }
    std::stable_sort(axes.begin(), axes.end(), [](const Axis& a, const Axis& b) { return a.stride > b.stride; });
    if (axes.empty()) axes.push_back(Axis{1, 1, 1});

    // Slabs: the axes whose inner elements exceed a slab are walked one index at a time, and the axis where a slab
    // fits is cut into pieces of `piece` indices.
    std::size_t cut = axes.size() - 1;
    std::uint64_t inner = 1;  // elements per index of axis `cut`
    while (cut > 0 && inner * axes[cut].extent <= kSlabElements) inner *= axes[cut--].extent;
    if (inner * axes[cut].extent <= kSlabElements) inner = 0;  // everything fits: one slab
    const std::uint64_t piece = inner == 0 ? axes[0].extent : std::max<std::uint64_t>(1, kSlabElements / inner);
    std::vector<Axis> walked(axes.begin(), axes.begin() + (inner == 0 ? 0 : cut));

    thread_local std::vector<std::uint64_t> positions;
    thread_local std::vector<std::uint8_t> staging;
    const std::size_t first_slab_axis = inner == 0 ? 0 : cut;
    for_each_element(walked, position, out_start, [&](std::uint64_t slab_position, std::uint64_t slab_out) {
        const Axis& sliced = axes[first_slab_axis];
        for (std::uint64_t at = 0; at < sliced.extent; at += piece) {
            std::vector<Axis> slab(axes.begin() + first_slab_axis, axes.end());
            slab[0].extent = std::min(piece, sliced.extent - at);
            const std::uint64_t base_position = slab_position + at * sliced.stride;
            const std::uint64_t base_out = slab_out + at * sliced.step;
            positions.clear();
            for_each_element(slab, base_position, 0, [&](std::uint64_t p, std::uint64_t) { positions.push_back(p); });
            staging.resize(positions.size() * element);
            stage<kBytes>(positions, element, read, staging.data());
            unstage<kBytes>(slab, staging.data(), element, dst + base_out * element);
        }
    });
}

template <std::size_t kBytes>
void gather_boxes(const std::vector<std::uint64_t>& shape, const std::vector<std::uint64_t>& stride,
                  std::size_t element, std::uint64_t first, std::uint64_t count, const ReadRaw& read,
                  std::uint8_t* dst) {
    for (const Box& box : boxes_of(shape, first, count)) {
        gather_box<kBytes>(shape, stride, box, box.first - first, element, read, dst);
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
    switch (element_bytes) {
        case 1: return gather_boxes<1>(shape, stride, element_bytes, first, count, read, dst);
        case 2: return gather_boxes<2>(shape, stride, element_bytes, first, count, read, dst);
        case 4: return gather_boxes<4>(shape, stride, element_bytes, first, count, read, dst);
        case 8: return gather_boxes<8>(shape, stride, element_bytes, first, count, read, dst);
        default: return gather_boxes<0>(shape, stride, element_bytes, first, count, read, dst);
    }
}

void read_stored_blocks(const SourceFiles& files, const Tensor& tensor, std::uint64_t first_block,
                        std::uint64_t blocks, std::uint8_t* dst) {
    const ReadRaw read = [&](std::uint64_t offset, std::size_t length, void* into) {
        files.read_of_tensor(tensor, tensor.offset + offset, length, into);
    };
    read_stored_blocks(tensor, first_block, blocks, read, dst);
}

void read_stored_blocks(const Tensor& tensor, std::uint64_t first_block, std::uint64_t blocks, const ReadRaw& read,
                        std::uint8_t* dst) {
    const std::uint64_t block_bytes = tensor.type->block_bytes;
    if (!tensor.strided()) {
        return read(first_block * block_bytes, static_cast<std::size_t>(blocks * block_bytes), dst);
    }
    // Strided views are PyTorch tensors, whose blocks are single elements.
    gather_strided(tensor.shape, tensor.stride, static_cast<std::size_t>(block_bytes), first_block, blocks, read, dst);
}

}  // namespace tensorfs
