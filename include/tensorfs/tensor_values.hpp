// A tensor's elements written straight into memory its reader owns (the Python module's arrays), as stored or as one
// of the value views: decoded from whole blocks into their place, with no decoded-chunk cache and no copy of the
// output between.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>

#include "tensorfs/catalog.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/value_view.hpp"

namespace tensorfs {

// How the stored bytes are fetched from a remote file.
enum class Fetch : std::uint8_t {
    Stream,  // whole tensors read in order: the file reads ahead of the reader (SourceFiles::read_of_tensor)
    Exact,   // parts of tensors (a slice's rows): exactly the bytes asked, nothing ahead
};

// Writes elements [first, first + count) of `tensor` (in C order) to `out`: with no `view`, its stored elements
// (types of one element per block; a strided view gathered into C order); else their values in `view`, the whole
// blocks decoded into place and a partial block at either end through a buffer of one block. Throws IoError.
void write_elements(const SourceFiles& files, const Tensor& tensor, std::optional<ValueView> view,
                    std::uint64_t first, std::uint64_t count, void* out, Fetch fetch);

// `repeat` runs of `count` elements of a tensor, contiguous in C order, the first at element `first`, each `stride`
// elements after the one before: part of what a slice selects.
struct ElementRun {
    std::uint64_t first;
    std::uint64_t count;
    std::uint64_t repeat = 1;
    std::uint64_t stride = 0;
};

// Writes the elements of `runs` (in the order of the tensor's elements) one after the other to `out`, as
// write_elements writes each: their stored bytes read together, in batches of about 4 MiB of the file on up to
// `threads` threads (SourceObject::read_runs: a remote file reads the runs of a column slice, which touches every
// row, from whole blocks, not as a range per row). Not for quantized weights, whose values come whole rows at a
// time. Throws IoError. Once `*stop` is set, the batches not yet begun are skipped (as write_tensors does).
void write_element_runs(const SourceFiles& files, const Tensor& tensor, std::optional<ValueView> view,
                        std::span<const ElementRun> runs, void* out, unsigned threads,
                        const std::atomic<bool>* stop = nullptr);

// One whole tensor to write: catalog index, view (as for write_elements) and where its elements go.
struct TensorOutput {
    std::uint32_t tensor;
    std::optional<ValueView> view;
    void* out;
};

// Writes whole tensors, cut into pieces that up to `threads` threads write at once, in the order of the outputs
// (so in the source's order when the outputs are), fetched as Fetch::Stream. When a piece fails, the others still
// run; then the first failure is thrown (IoError). Once `*stop` is set (a reader that gave up: Python's Ctrl-C),
// the pieces not yet begun are skipped and the outputs are left incomplete.
void write_tensors(const Catalog& catalog, const SourceFiles& files, std::span<const TensorOutput> outputs,
                   unsigned threads, const std::atomic<bool>* stop = nullptr);

}  // namespace tensorfs
