#include "tensorfs/tensor_values.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tensorfs/in_parallel.hpp"
#include "tensorfs/quantized_values.hpp"
#include "tensorfs/decode_view.hpp"
#include "tensorfs/stored_blocks.hpp"

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
