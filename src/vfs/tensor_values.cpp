#include "tensorfs/tensor_values.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tensorfs/in_parallel.hpp"
#include "tensorfs/quantized_values.hpp"
#include "tensorfs/decode_view.hpp"
#include "tensorfs/source_object.hpp"
#include "stored_blocks.hpp"

namespace tensorfs {
namespace {

// Stored bytes read at a time before they are decoded: they stay in the core's L2 cache while the kernel reads them.
constexpr std::uint64_t kStoredAtOnce = 256 << 10;
// Bytes of output a piece of write_tensors covers: large enough that one remote read asks for a good share of a
// range request, small enough that a few tensors give every thread work.
constexpr std::uint64_t kPieceBytes = 4 << 20;

std::size_t element_bytes(const Tensor& tensor, std::optional<ValueView> view) {
    return view ? bytes_per_value(*view) : tensor.type->block_bytes;
}

// The elements of one piece of a whole tensor: about kPieceBytes of output in whole blocks, or a quantized weight's
// rows_at_once rows.
std::uint64_t piece_elements(const Tensor& tensor, std::optional<ValueView> view) {
    if (tensor.quantization) return rows_at_once(tensor, *view) * row_elements(tensor);
    const std::uint64_t per_block = tensor.type->block_elements;
    return std::max<std::uint64_t>(1, kPieceBytes / element_bytes(tensor, view) / per_block) * per_block;
}

// Elements [first, first + count) of a quantized weight's values: its whole rows straight into place, a partial
// row at either end through a buffer of one row.
void write_quantized_elements(const SourceFiles& files, const Tensor& tensor, ValueView view, std::uint64_t first,
                              std::uint64_t count, std::uint8_t* to) {
    const std::uint64_t row = row_elements(tensor);
    const std::size_t value_bytes = bytes_per_value(view);
    thread_local std::vector<std::uint8_t> partial;
    for (std::uint64_t at = first, end = first + count; at < end;) {
        const std::uint64_t skip = at % row;
        if (skip != 0 || end - at < row) {
            partial.resize(row * value_bytes);
            write_quantized_rows(files, tensor, at / row, 1, view, partial.data());
            const std::uint64_t taken = std::min(row - skip, end - at);
            std::memcpy(to, partial.data() + skip * value_bytes, taken * value_bytes);
            to += taken * value_bytes;
            at += taken;
            continue;
        }
        const std::uint64_t rows = (end - at) / row;
        write_quantized_rows(files, tensor, at / row, rows, view, to);
        to += rows * row * value_bytes;
        at += rows * row;
    }
}

// Elements [first, first + count) of a tensor that is not a quantized weight, as write_elements writes them, its stored
// bytes read by `read`.
void write_stored_or_decoded(const Tensor& tensor, std::optional<ValueView> view, std::uint64_t first,
                             std::uint64_t count, const ReadRaw& read, std::uint8_t* to) {
    if (!view) return read_stored_blocks(tensor, first, count, read, to);

    const TypeTraits& type = *tensor.type;
    const std::uint64_t per_block = type.block_elements;
    const std::size_t value_bytes = bytes_per_value(*view);
    const std::uint64_t blocks_at_once = std::max<std::uint64_t>(1, kStoredAtOnce / type.block_bytes);
    thread_local std::vector<std::uint8_t> stored;
    thread_local std::vector<std::uint8_t> partial;
    for (std::uint64_t at = first, end = first + count; at < end;) {
        const std::uint64_t block = at / per_block;
        const std::uint64_t skip = at % per_block;
        if (skip != 0 || end - at < per_block) {
            // Part of a block: decoded whole apart, and the part wanted copied out.
            stored.resize(type.block_bytes);
            read_stored_blocks(tensor, block, 1, read, stored.data());
            partial.resize(per_block * value_bytes);
            decode_blocks(type, stored.data(), 1, *view, partial.data());
            const std::uint64_t taken = std::min(per_block - skip, end - at);
            std::memcpy(to, partial.data() + skip * value_bytes, taken * value_bytes);
            to += taken * value_bytes;
            at += taken;
            continue;
        }
        const std::uint64_t blocks = std::min((end - at) / per_block, blocks_at_once);
        stored.resize(blocks * type.block_bytes);
        read_stored_blocks(tensor, block, blocks, read, stored.data());
        decode_blocks(type, stored.data(), blocks, *view, to);
        to += blocks * per_block * value_bytes;
        at += blocks * per_block;
    }
}

// Where the stored bytes of elements [first, first + count) of a tensor that is not strided lie in its raw bytes:
// [begin, end), whole blocks.
struct StoredSpan {
    std::uint64_t begin;
    std::uint64_t end;
};
StoredSpan stored_span(const Tensor& tensor, std::uint64_t first, std::uint64_t count) {
    const std::uint64_t per_block = tensor.type->block_elements;
    return {first / per_block * tensor.type->block_bytes,
            (first + count + per_block - 1) / per_block * tensor.type->block_bytes};
}

// Elements of a tensor that a slice selects, and where they go.
struct SelectedPiece {
    std::uint64_t first;
    std::uint64_t count;
    std::uint8_t* out;
};

// Writes `pieces` (in the order of their bytes in the file) of a tensor that is neither strided nor a quantized
// weight: their stored bytes read with one read_runs, straight into their places when they are the output, else into
// a buffer they are decoded from.
void write_selected(const SourceFiles& files, const Tensor& tensor, std::optional<ValueView> view,
                    std::span<const SelectedPiece> pieces) {
    std::vector<SourceObject::Run> runs;
    if (!view) {
        for (const SelectedPiece& piece : pieces) {
            const StoredSpan span = stored_span(tensor, piece.first, piece.count);
            runs.push_back({tensor.offset + span.begin, static_cast<std::size_t>(span.end - span.begin), piece.out});
        }
        return files.read_runs(tensor.file, runs);
    }
    // Pieces whose blocks overlap or touch are one run (two pieces may share a block of a type of many elements).
    std::vector<std::uint64_t> run_begins;  // where each run begins in the tensor's raw bytes
    std::vector<std::uint64_t> places;      // where each run, then each piece's stored bytes, begin in `gathered`
    std::uint64_t total = 0;
    std::uint64_t run_end = 0;
    for (const SelectedPiece& piece : pieces) {
        const StoredSpan span = stored_span(tensor, piece.first, piece.count);
        if (runs.empty() || span.begin > run_end) {
            runs.push_back({tensor.offset + span.begin, 0, nullptr});
            run_begins.push_back(span.begin);
            places.push_back(total);
            run_end = span.begin;
        }
        if (span.end > run_end) {
            runs.back().length += static_cast<std::size_t>(span.end - run_end);
            total += span.end - run_end;
            run_end = span.end;
        }
    }
    thread_local std::vector<std::uint8_t> gathered;
    gathered.resize(total);
    for (std::size_t i = 0; i < runs.size(); ++i) runs[i].dst = gathered.data() + places[i];
    files.read_runs(tensor.file, runs);
    std::size_t run = 0;
    for (const SelectedPiece& piece : pieces) {
        const StoredSpan span = stored_span(tensor, piece.first, piece.count);
        while (run + 1 < runs.size() && run_begins[run + 1] <= span.begin) ++run;
        const std::uint8_t* stored = gathered.data() + places[run] + (span.begin - run_begins[run]);
        const ReadRaw read = [&](std::uint64_t offset, std::size_t length, void* into) {
            std::memcpy(into, stored + (offset - span.begin), length);
        };
        write_stored_or_decoded(tensor, view, piece.first, piece.count, read, piece.out);
    }
}

}  // namespace

void write_elements(const SourceFiles& files, const Tensor& tensor, std::optional<ValueView> view,
                    std::uint64_t first, std::uint64_t count, void* out, Fetch fetch) {
    if (count == 0) return;
    const ReadRaw read = [&](std::uint64_t offset, std::size_t length, void* into) {
        if (fetch == Fetch::Exact) {
            files.read_exact(tensor.file, tensor.offset + offset, length, into);
        } else {
            files.read_of_tensor(tensor, tensor.offset + offset, length, into);
        }
    };
    auto* to = static_cast<std::uint8_t*>(out);
    if (tensor.quantization) return write_quantized_elements(files, tensor, *view, first, count, to);
    write_stored_or_decoded(tensor, view, first, count, read, to);
}

void write_element_runs(const SourceFiles& files, const Tensor& tensor, std::optional<ValueView> view,
                        std::span<const ElementRun> runs, void* out, unsigned threads,
                        const std::atomic<bool>* stop) {
    const auto stopped = [stop] { return stop != nullptr && stop->load(std::memory_order_relaxed); };
    // The runs one after the other, cut into pieces of about kPieceBytes of output each written where it goes.
    const std::uint64_t per_piece = piece_elements(tensor, view);
    const std::size_t bytes = element_bytes(tensor, view);
    std::vector<SelectedPiece> pieces;
    auto* to = static_cast<std::uint8_t*>(out);
    for (const ElementRun& run : runs) {
        for (std::uint64_t r = 0; r < run.repeat; ++r) {
            const std::uint64_t begin = run.first + r * run.stride;
            const std::uint64_t end = begin + run.count;
            for (std::uint64_t at = begin; at < end;) {
                const std::uint64_t border = std::min(end, (at / per_piece + 1) * per_piece);
                pieces.push_back(SelectedPiece{at, border - at, to});
                to += (border - at) * bytes;
                at = border;
            }
        }
    }
    if (pieces.empty()) return;
    if (tensor.strided()) {
        // A strided view's elements are gathered one by one: each piece fetches exactly what it spans.
        return in_parallel(pieces.size(), threads, [&](std::size_t index) {
            if (stopped()) return;
            const SelectedPiece& piece = pieces[index];
            write_elements(files, tensor, view, piece.first, piece.count, piece.out, Fetch::Exact);
        });
    }
    // Batches of the pieces whose stored bytes lie within kPieceBytes of the batch's first byte, on several threads:
    // a column slice's rows come a batch of them at a time.
    std::vector<std::size_t> batches;  // the first piece of each, then the end
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        const std::uint64_t batch_begin =
            batches.empty() ? 0 : stored_span(tensor, pieces[batches.back()].first, 1).begin;
        if (batches.empty() ||
            stored_span(tensor, pieces[i].first, pieces[i].count).end - batch_begin > kPieceBytes) {
            batches.push_back(i);
        }
    }
    batches.push_back(pieces.size());
    in_parallel(batches.size() - 1, threads, [&](std::size_t index) {
        if (stopped()) return;
        const std::span<const SelectedPiece> all(pieces);
        write_selected(files, tensor, view, all.subspan(batches[index], batches[index + 1] - batches[index]));
    });
}

void write_tensors(const Catalog& catalog, const SourceFiles& files, std::span<const TensorOutput> outputs,
                   unsigned threads, const std::atomic<bool>* stop) {
    struct Piece {
        const TensorOutput* output;
        std::uint64_t first;
        std::uint64_t count;
    };
    std::vector<Piece> pieces;
    for (const TensorOutput& output : outputs) {
        const Tensor& tensor = catalog.tensors[output.tensor];
        const std::uint64_t per_piece = piece_elements(tensor, output.view);
        for (std::uint64_t first = 0; first < tensor.elements; first += per_piece) {
            pieces.push_back(Piece{&output, first, std::min(per_piece, tensor.elements - first)});
        }
    }
    in_parallel(pieces.size(), threads, [&](std::size_t index) {
        if (stop != nullptr && stop->load(std::memory_order_relaxed)) return;
        const Piece& piece = pieces[index];
        const Tensor& tensor = catalog.tensors[piece.output->tensor];
        auto* out = static_cast<std::uint8_t*>(piece.output->out) +
                    piece.first * element_bytes(tensor, piece.output->view);
        write_elements(files, tensor, piece.output->view, piece.first, piece.count, out, Fetch::Stream);
    });
}

}  // namespace tensorfs
