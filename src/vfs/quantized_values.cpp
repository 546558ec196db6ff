// Each scheme reads, for a run of logical rows, the parts' bytes those rows need, and hands them row by row to the
// kernels of quantized_kernels.hpp, which follow the references (cited there). Schemes that store the transpose of
// the logical weight (GPTQ, AWQ, MXFP4) decode tiles of stored rows (so that the kernels run along contiguous
// columns), each transposed into its place in the output while it is still in the cache.
//
// The shapes were checked against each other when the model was opened (src/format/quantized_weights.cpp); values
// are checked here, where they are read (g_idx entries).
#include "tensorfs/quantized_values.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <memory>

#include "tensorfs/decode_view.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/f32_to_16.hpp"
#include "tensorfs/quantized_kernels.hpp"
#include "stored_blocks.hpp"

namespace tensorfs {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// Stored rows of a transposed scheme decoded at a time: a tile of [kTileRows, chunk rows] values stays in the
// core's L2 cache between its decode and its transpose into the output.
constexpr std::uint64_t kTileRows = 64;

// Memory a thread reuses from one run of rows to the next, never cleared: after the first, decoding allocates
// nothing, and a buffer's first use costs no pass of zeros over memory it is about to write.
template <typename T>
class Buffer {
public:
    T* room(std::uint64_t count) {
        if (count > size_) {
            data_ = std::make_unique_for_overwrite<T[]>(count);
            size_ = count;
        }
        return data_.get();
    }

private:
    std::unique_ptr<T[]> data_;
    std::uint64_t size_ = 0;
};

// The scratch memory of one decode, by purpose.
struct Scratch {
    Buffer<std::uint8_t> main;      // the main part's bytes
    Buffer<std::uint8_t> raw;       // a part's bytes before they become numbers
    Buffer<std::uint8_t> run;       // stored rows read at once, their columns to pick
    Buffer<float> scales;
    Buffer<std::int32_t> zeros;
    Buffer<std::int32_t> groups;    // g_idx
    Buffer<float> tile;             // values in the stored orientation
    Buffer<float> narrowing;        // float32 values on their way to 16 bits
    Buffer<float> column_scales;    // per column, for act-order
    Buffer<std::int32_t> column_zeros;
};

thread_local Scratch scratch;

// Where decoded float32 rows go: straight into the output for the F32 view, else through a buffer rounded to 16
// bits.
class RowSink {
public:
    RowSink(ValueView view, std::uint64_t row_length, void* out) : view_(view), length_(row_length), out_(out) {}

    // Memory for float32 row `row` (counted from the first written): the output itself, or the buffer.
    float* row(std::uint64_t row) {
        if (view_ == ValueView::F32) return static_cast<float*>(out_) + row * length_;
        return scratch.narrowing.room(length_);
    }
    // Called once row `row` is in the memory row() gave.
    void written(std::uint64_t row) {
        if (view_ != ValueView::F32) narrow(scratch.narrowing.room(length_), length_, row * length_);
    }
    // A tile of a transposed scheme: `tile` ([stored_rows, rows] values) is the columns [column, column +
    // stored_rows) of output rows [first_row, first_row + rows).
    void write_transposed(const float* tile, std::uint64_t stored_rows, std::uint64_t rows, std::uint64_t first_row,
                          std::uint64_t column) {
        const QuantizedKernels& kernels = active_quantized_kernels();
        if (view_ == ValueView::F32) {
            kernels.transpose(tile, stored_rows, rows, static_cast<float*>(out_) + first_row * length_ + column,
                              length_);
            return;
        }
        float* transposed = scratch.narrowing.room(stored_rows * rows);
        kernels.transpose(tile, stored_rows, rows, transposed, stored_rows);
        for (std::uint64_t r = 0; r < rows; ++r) {
            narrow(transposed + r * stored_rows, stored_rows, (first_row + r) * length_ + column);
        }
    }

private:
    void narrow(const float* values, std::uint64_t count, std::uint64_t first) {
        const NarrowKernel kernel = view_ == ValueView::BF16 ? active_bf16_kernel() : active_f16_kernel();
        kernel(values, static_cast<std::size_t>(count), static_cast<std::uint16_t*>(out_) + first);
    }

    ValueView view_;
    std::uint64_t length_;
    void* out_;
};

// Reads the parts of one weight for one run of rows.
class Parts {
public:
    Parts(const SourceFiles& files, const Tensor& tensor) : files_(files), tensor_(tensor) {}

    const Quantization& quantization() const { return *tensor_.quantization; }
    const Tensor& stored(std::string_view role) const { return quantization().part(role)->stored; }
    bool has(std::string_view role) const { return quantization().part(role) != nullptr; }

    // Bytes [offset, offset + length) of a part's raw bytes.
    void read(const Tensor& part, std::uint64_t offset, std::uint64_t length, void* out) const {
        files_.read_exact(part.file, part.offset + offset, static_cast<std::size_t>(length), out);
    }

    // Columns [first, first + count) of every row of a [rows, columns] matrix of `element_bytes` elements that starts
    // `at` bytes into a part, gathered into a [rows, count] matrix: a read per row, or runs of rows read whole where
    // the columns left out are few.
    void read_columns(const Tensor& part, std::uint64_t rows, std::uint64_t columns, std::uint64_t first,
                      std::uint64_t count, std::size_t element_bytes, std::uint64_t at, void* out) const {
        const std::uint64_t row_bytes = columns * element_bytes, wanted = count * element_bytes;
        auto* to = static_cast<std::uint8_t*>(out);
        at += first * element_bytes;
        if (rows == 0 || wanted == 0) return;
        if (wanted == row_bytes) return read(part, at, rows * row_bytes, to);
        if (row_bytes - wanted > kNearbyBytes) {
            for (std::uint64_t r = 0; r < rows; ++r) read(part, at + r * row_bytes, wanted, to + r * wanted);
            return;
        }
        const std::uint64_t rows_per_run = std::max<std::uint64_t>(1, kLongestGatherRead / row_bytes);
        std::uint8_t* run = scratch.run.room((rows_per_run - 1) * row_bytes + wanted);
        for (std::uint64_t r = 0; r < rows; r += rows_per_run) {
            const std::uint64_t n = std::min(rows_per_run, rows - r);
            read(part, at + r * row_bytes, (n - 1) * row_bytes + wanted, run);
            for (std::uint64_t i = 0; i < n; ++i) std::memcpy(to + (r + i) * wanted, run + i * row_bytes, wanted);
        }
    }

    // The float32 values of elements [first, first + count) of a part whose elements are single floats (F32, BF16,
    // F16, F8_E4M3), exactly.
    void read_floats(const Tensor& part, std::uint64_t first, std::uint64_t count, float* out) const {
        std::uint8_t* bytes = scratch.raw.room(count * part.type->block_bytes);
        read(part, first * part.type->block_bytes, count * part.type->block_bytes, bytes);
        decode_blocks(*part.type, bytes, count, ValueView::F32, out);
    }

    // [rows, count] floats from columns [first, first + count) of a float part's [rows, columns] matrix.
    void read_float_columns(const Tensor& part, std::uint64_t rows, std::uint64_t columns, std::uint64_t first,
                            std::uint64_t count, float* out) const {
        const std::size_t size = part.type->block_bytes;
        std::uint8_t* bytes = scratch.raw.room(rows * count * size);
        read_columns(part, rows, columns, first, count, size, 0, bytes);
        decode_blocks(*part.type, bytes, rows * count, ValueView::F32, out);
    }

    // The group of every input column: g_idx's entries, each checked to name one of `groups` groups.
    const std::int32_t* group_indexes(const Tensor& part, std::uint64_t groups) const {
        std::int32_t* entries = scratch.groups.room(part.elements);
        read(part, 0, part.elements * 4, entries);
        for (std::uint64_t i = 0; i < part.elements; ++i) {
            if (entries[i] < 0 || static_cast<std::uint64_t>(entries[i]) >= groups) {
                throw IoError(tensor_.name,
                              part.name + "[" + std::to_string(i) + "] = " + std::to_string(entries[i]) +
                                  " is out of range: there are " + std::to_string(groups) + " groups",
                              ErrorKind::InvalidSource);
            }
        }
        return entries;
    }

private:
    const SourceFiles& files_;
    const Tensor& tensor_;
};

// The stored field `index` of `bits` bits of a run of packed words (lowest bits first).
std::int32_t field(const std::uint32_t* words, std::uint64_t index, unsigned bits) {
    const std::uint64_t per_word = 32 / bits;
    return static_cast<std::int32_t>((words[index / per_word] >> (bits * (index % per_word))) & ((1u << bits) - 1));
}

// fp8-block and fp8 (DeepSeek-V3 weight_dequant, compressed-tensors _dequantize): [out, in] F8_E4M3 values, each
// times the scale of its block of the grid (a block of one row for a scale per row, the whole tensor for one scale).
void fp8_rows(const Parts& parts, const Tensor& tensor, std::uint64_t first, std::uint64_t rows, RowSink& sink) {
    const Quantization& q = parts.quantization();
    const std::uint64_t in = tensor.shape[1];
    const Tensor& scale = parts.stored(q.scheme == QuantScheme::Fp8Block ? "weight_scale_inv" : "weight_scale");
    const std::uint64_t scale_columns = ceil_div(in, q.block_columns);
    const std::uint64_t first_scale_row = first / q.block_rows;
    const std::uint64_t scale_rows = (first + rows - 1) / q.block_rows - first_scale_row + 1;
    std::uint8_t* values = scratch.main.room(rows * in);
    parts.read(parts.stored("weight"), first * in, rows * in, values);
    float* scales = scratch.scales.room(scale_rows * scale_columns);
    parts.read_floats(scale, first_scale_row * scale_columns, scale_rows * scale_columns, scales);
    const QuantizedKernels& kernels = active_quantized_kernels();
    for (std::uint64_t r = 0; r < rows; ++r) {
        const float* row_scales = scales + ((first + r) / q.block_rows - first_scale_row) * scale_columns;
        kernels.fp8_e4m3_scaled(values + r * in, in, row_scales, q.block_columns, sink.row(r));
        sink.written(r);
    }
}

// nvfp4 (ModelOpt NVFP4QTensor.dequantize): each value times (f32(its block's F8 scale) * weight_scale_2), the
// scale's product first.
void nvfp4_rows(const Parts& parts, const Tensor& tensor, std::uint64_t first, std::uint64_t rows, RowSink& sink) {
    const std::uint64_t in = tensor.shape[1], half = in / 2, blocks = ceil_div(in, 16);
    std::uint8_t* values = scratch.main.room(rows * half);
    parts.read(parts.stored("weight"), first * half, rows * half, values);
    float global = 0;
    parts.read_floats(parts.stored("weight_scale_2"), 0, 1, &global);
    float* scales = scratch.scales.room(rows * blocks);
    parts.read_floats(parts.stored("weight_scale"), first * blocks, rows * blocks, scales);
    for (std::uint64_t i = 0; i < rows * blocks; ++i) scales[i] = scales[i] * global;
    const QuantizedKernels& kernels = active_quantized_kernels();
    for (std::uint64_t r = 0; r < rows; ++r) {
        kernels.nvfp4_scaled(values + r * half, in, scales + r * blocks, sink.row(r));
        sink.written(r);
    }
}

// Keeps columns [skip, skip + count) of each of the `rows` rows of a [rows, width] tile, packed as [rows, count].
void keep_columns(float* tile, std::uint64_t rows, std::uint64_t width, std::uint64_t skip, std::uint64_t count) {
    if (skip == 0 && count == width) return;
    for (std::uint64_t r = 0; r < rows; ++r) std::memmove(tile + r * count, tile + r * width + skip, count * 4);
}

// mxfp4 (gpt-oss _get_mxfp4_tensor, then transformers' transpose): logical row (e, k) is column k of expert e's
// stored [R, G*32] values. The rows of one expert are decoded from the groups that hold their columns.
void mxfp4_rows(const Parts& parts, const Tensor& tensor, std::uint64_t first, std::uint64_t rows, RowSink& sink) {
    const Tensor& blocks = parts.stored("blocks");
    const Tensor& exponents = parts.stored("scales");
    const std::uint64_t stored_rows = blocks.shape[1], groups = blocks.shape[2], columns = tensor.shape[1];
    const QuantizedKernels& kernels = active_quantized_kernels();
    for (std::uint64_t done = 0; done < rows;) {
        const std::uint64_t row = first + done;
        const std::uint64_t expert = row / columns, column = row % columns;
        const std::uint64_t count = std::min(rows - done, columns - column);
        const std::uint64_t first_group = column / 32, group_count = ceil_div(column + count, 32) - first_group;
        const std::uint64_t width = group_count * 32;
        // Expert `expert`'s bytes of those groups, one run of group_count * 16 bytes per stored row.
        std::uint8_t* packed = scratch.main.room(stored_rows * group_count * 16);
        parts.read_columns(blocks, stored_rows, groups * 16, first_group * 16, group_count * 16, 1,
                           expert * stored_rows * groups * 16, packed);
        std::uint8_t* scale_bytes = scratch.raw.room(stored_rows * group_count);
        parts.read_columns(exponents, stored_rows, groups, first_group, group_count, 1, expert * stored_rows * groups,
                           scale_bytes);
        const std::uint64_t skip = column - first_group * 32;
        float* tile = scratch.tile.room(kTileRows * width);
        for (std::uint64_t r0 = 0; r0 < stored_rows; r0 += kTileRows) {
            const std::uint64_t tile_rows = std::min(kTileRows, stored_rows - r0);
            for (std::uint64_t r = 0; r < tile_rows; ++r) {
                kernels.mxfp4_scaled(packed + (r0 + r) * group_count * 16, width,
                                     scale_bytes + (r0 + r) * group_count, tile + r * width);
            }
            keep_columns(tile, tile_rows, width, skip, count);
            sink.write_transposed(tile, tile_rows, count, done, r0);
        }
        done += count;
    }
}

// gptq (AutoGPTQ qlinear_cuda.py; GPTQModel for gptq_v2): logical row j is column j of the stored [in, out] values,
// value (i, j) = scales[g][j] * (q[i][j] - zero[g][j]) with g = g_idx[i]; a v1 checkpoint stores each zero less
// one, and AutoGPTQ adds the one back after masking the field (so a stored all-ones field reads back as 2^bits).
void gptq_rows(const Parts& parts, const Tensor& tensor, std::uint64_t first, std::uint64_t rows, RowSink& sink) {
    const Quantization& q = parts.quantization();
    const Tensor& qweight = parts.stored("qweight");
    const Tensor& qzeros = parts.stored("qzeros");
    const Tensor& scales_part = parts.stored("scales");
    const std::uint64_t in = tensor.shape[1], out = tensor.shape[0];
    const std::uint64_t per_word = 32 / q.bits, packed_rows = qweight.shape[0], groups = scales_part.shape[0];
    auto* words = reinterpret_cast<std::uint32_t*>(scratch.main.room(packed_rows * rows * 4));
    parts.read_columns(qweight, packed_rows, out, first, rows, 4, 0, words);
    float* scales = scratch.scales.room(groups * rows);
    parts.read_float_columns(scales_part, groups, out, first, rows, scales);
    // Zero points: the words that hold columns [first, first + rows), unpacked to one per group and column.
    const std::uint64_t first_word = first / per_word, word_count = (first + rows - 1) / per_word - first_word + 1;
    auto* zero_words = reinterpret_cast<std::uint32_t*>(scratch.raw.room(groups * word_count * 4));
    parts.read_columns(qzeros, groups, qzeros.shape[1], first_word, word_count, 4, 0, zero_words);
    std::int32_t* zeros = scratch.zeros.room(groups * rows);
    for (std::uint64_t g = 0; g < groups; ++g) {
        for (std::uint64_t j = 0; j < rows; ++j) {
            const std::int32_t stored = field(zero_words + g * word_count, first + j - first_word * per_word, q.bits);
            zeros[g * rows + j] = q.zeros_less_one ? stored + 1 : stored;
        }
    }
    const std::int32_t* g_idx = parts.has("g_idx") ? parts.group_indexes(parts.stored("g_idx"), groups) : nullptr;
    float* tile = scratch.tile.room(kTileRows * rows);
    const QuantizedKernels& kernels = active_quantized_kernels();
    for (std::uint64_t i0 = 0; i0 < in; i0 += kTileRows) {
        const std::uint64_t tile_rows = std::min(kTileRows, in - i0);
        for (std::uint64_t i = i0; i < i0 + tile_rows; ++i) {
            const std::uint64_t g = g_idx != nullptr ? static_cast<std::uint64_t>(g_idx[i]) : i / q.group_size;
            kernels.field_of_words(words + (i / per_word) * rows, rows, static_cast<unsigned>(q.bits * (i % per_word)),
                                   q.bits, zeros + g * rows, scales + g * rows, tile + (i - i0) * rows);
        }
        sink.write_transposed(tile, tile_rows, rows, 0, i0);
    }
}

// awq (AutoAWQ dequantize_gemm): logical row j is column j of the stored [in, out] values, value (i, j) =
// (q[i][j] - zero[g][j]) * scales[g][j] with g = i / group_size, the columns of each word in AWQ's order.
void awq_rows(const Parts& parts, const Tensor& tensor, std::uint64_t first, std::uint64_t rows, RowSink& sink) {
    const Quantization& q = parts.quantization();
    const Tensor& qweight = parts.stored("qweight");
    const Tensor& qzeros = parts.stored("qzeros");
    const Tensor& scales_part = parts.stored("scales");
    const std::uint64_t in = tensor.shape[1], out = tensor.shape[0], word_columns = qweight.shape[1];
    const std::uint64_t groups = scales_part.shape[0];
    const std::uint64_t first_word = first / 8, word_count = ceil_div(first + rows, 8) - first_word;
    const std::uint64_t columns = std::min(word_count * 8, out - first_word * 8);
    auto* words = reinterpret_cast<std::uint32_t*>(scratch.main.room(in * word_count * 4));
    parts.read_columns(qweight, in, word_columns, first_word, word_count, 4, 0, words);
    float* scales = scratch.scales.room(groups * columns);
    parts.read_float_columns(scales_part, groups, out, first_word * 8, columns, scales);
    auto* zero_words = reinterpret_cast<std::uint32_t*>(scratch.raw.room(groups * word_count * 4));
    parts.read_columns(qzeros, groups, word_columns, first_word, word_count, 4, 0, zero_words);
    std::int32_t* zeros = scratch.zeros.room(groups * columns);
    for (std::uint64_t g = 0; g < groups; ++g) {
        for (std::uint64_t c = 0; c < columns; ++c) {
            const std::uint32_t word = zero_words[g * word_count + c / 8];
            zeros[g * columns + c] = static_cast<std::int32_t>((word >> (4 * kAwqField[c % 8])) & 15);
        }
    }
    float* tile = scratch.tile.room(kTileRows * columns);
    const QuantizedKernels& kernels = active_quantized_kernels();
    for (std::uint64_t i0 = 0; i0 < in; i0 += kTileRows) {
        const std::uint64_t tile_rows = std::min(kTileRows, in - i0);
        for (std::uint64_t i = i0; i < i0 + tile_rows; ++i) {
            const std::uint64_t g = i / q.group_size;
            kernels.awq_row(words + i * word_count, columns, zeros + g * columns, scales + g * columns,
                            tile + (i - i0) * columns);
        }
        keep_columns(tile, tile_rows, columns, first - first_word * 8, rows);
        sink.write_transposed(tile, tile_rows, rows, 0, i0);
    }
}

// The groups of a pack-quantized weight's rows: the columns of its [out, groups] scales, or one for a scale of the
// whole tensor.
std::uint64_t pack_groups(const Tensor& scale) { return scale.elements == 1 ? 1 : scale.shape[1]; }

// pack-quantized (compressed-tensors unpack_from_int32, then _dequantize): value (j, c) = (q - zero) * scale of
// column c's group. Stored fields are offset by 2^(bits-1) (the signed integers' zero), and so are the packed zero
// points: a symmetric weight's zero is that offset.
void pack_quantized_rows(const Parts& parts, const Tensor& tensor, std::uint64_t first, std::uint64_t rows,
                         RowSink& sink) {
    const Quantization& q = parts.quantization();
    const std::uint64_t in = tensor.shape[1], per_word = 32 / q.bits, row_words = ceil_div(in, per_word);
    const Tensor& scale = parts.stored("weight_scale");
    const bool one_scale = scale.elements == 1;
    const std::uint64_t groups = pack_groups(scale);
    auto* words = reinterpret_cast<std::uint32_t*>(scratch.main.room(rows * row_words * 4));
    parts.read(parts.stored("weight_packed"), first * row_words * 4, rows * row_words * 4, words);
    float* scales = scratch.scales.room(rows * groups);
    if (one_scale) {
        parts.read_floats(scale, 0, 1, scales);
        std::fill(scales + 1, scales + rows, scales[0]);
    } else {
        parts.read_floats(scale, first * groups, rows * groups, scales);
    }
    const std::uint64_t scale_step = one_scale ? 1 : groups;   // scales of consecutive rows
    std::int32_t* zeros = scratch.zeros.room(rows * groups);
    const std::int32_t offset = std::int32_t{1} << (q.bits - 1);
    if (!parts.has("weight_zero_point")) {
        std::fill(zeros, zeros + rows * groups, offset);
    } else if (const Tensor& zero_point = parts.stored("weight_zero_point"); zero_point.type->block_bytes == 1) {
        // Unpacked, as signed int8 (compressed-tensors before 0.10).
        auto* signed_zeros = reinterpret_cast<std::int8_t*>(scratch.raw.room(rows * groups));
        parts.read(zero_point, first * groups, rows * groups, signed_zeros);
        for (std::uint64_t i = 0; i < rows * groups; ++i) zeros[i] = signed_zeros[i] + offset;
    } else {
        // Packed along dim 0: the zero of row j and group g is field j % per_word of word [j / per_word][g].
        const std::uint64_t first_word_row = first / per_word;
        const std::uint64_t word_rows = (first + rows - 1) / per_word - first_word_row + 1;
        auto* zero_words = reinterpret_cast<std::uint32_t*>(scratch.raw.room(word_rows * groups * 4));
        parts.read(zero_point, first_word_row * groups * 4, word_rows * groups * 4, zero_words);
        for (std::uint64_t j = 0; j < rows; ++j) {
            const std::uint64_t row = first + j;
            for (std::uint64_t g = 0; g < groups; ++g) {
                const std::uint32_t word = zero_words[(row / per_word - first_word_row) * groups + g];
                zeros[j * groups + g] =
                    static_cast<std::int32_t>((word >> (q.bits * (row % per_word))) & ((1u << q.bits) - 1));
            }
        }
    }
    const std::int32_t* g_idx =
        parts.has("weight_g_idx") ? parts.group_indexes(parts.stored("weight_g_idx"), groups) : nullptr;
    const QuantizedKernels& kernels = active_quantized_kernels();
    for (std::uint64_t r = 0; r < rows; ++r) {
        const float* row_scales = scales + r * scale_step;
        const std::int32_t* row_zeros = zeros + r * groups;
        if (g_idx == nullptr) {
            kernels.packed_along_row(words + r * row_words, in, q.bits, row_zeros, row_scales, q.group_size,
                                     sink.row(r));
        } else {
            // Act-order: each column's own group, spelled out per column.
            float* column_scales = scratch.column_scales.room(in);
            std::int32_t* column_zeros = scratch.column_zeros.room(in);
            for (std::uint64_t c = 0; c < in; ++c) {
                column_scales[c] = row_scales[g_idx[c]];
                column_zeros[c] = row_zeros[g_idx[c]];
            }
            kernels.packed_along_row(words + r * row_words, in, q.bits, column_zeros, column_scales, 1, sink.row(r));
        }
        sink.written(r);
    }
}

}  // namespace

std::string quantized_values_problem(const SourceFiles& files, const Tensor& tensor) {
    const Parts parts(files, tensor);
    try {
        // GPTQ's scales are [groups, out]; compressed-tensors' [out, groups] (or one value).
        if (parts.has("g_idx")) parts.group_indexes(parts.stored("g_idx"), parts.stored("scales").shape.front());
        if (parts.has("weight_g_idx")) {
            parts.group_indexes(parts.stored("weight_g_idx"), pack_groups(parts.stored("weight_scale")));
        }
    } catch (const IoError& error) {
        return error.reason();
    }
    return {};
}

std::uint64_t rows_at_once(const Tensor& tensor, ValueView view) {
    const std::uint64_t bytes = stored_transposed(*tensor.quantization) ? 16 << 20 : 4 << 20;
    return std::max<std::uint64_t>(1, bytes / bytes_per_value(view) / std::max<std::uint64_t>(1, row_elements(tensor)));
}

bool stored_transposed(const Quantization& quantization) {
    return quantization.scheme == QuantScheme::Gptq || quantization.scheme == QuantScheme::Awq ||
           quantization.scheme == QuantScheme::Mxfp4;
}

void write_quantized_rows(const SourceFiles& files, const Tensor& tensor, std::uint64_t first_row,
                          std::uint64_t rows, ValueView view, void* out) {
    if (rows == 0 || row_elements(tensor) == 0) return;
    const Parts parts(files, tensor);
    RowSink sink(view, row_elements(tensor), out);
    switch (tensor.quantization->scheme) {
        case QuantScheme::Fp8Block:
        case QuantScheme::Fp8: return fp8_rows(parts, tensor, first_row, rows, sink);
        case QuantScheme::Nvfp4: return nvfp4_rows(parts, tensor, first_row, rows, sink);
        case QuantScheme::Mxfp4: return mxfp4_rows(parts, tensor, first_row, rows, sink);
        case QuantScheme::Gptq: return gptq_rows(parts, tensor, first_row, rows, sink);
        case QuantScheme::Awq: return awq_rows(parts, tensor, first_row, rows, sink);
        case QuantScheme::PackQuantized: return pack_quantized_rows(parts, tensor, first_row, rows, sink);
    }
}

}  // namespace tensorfs
