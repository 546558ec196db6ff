#include "diff_compare.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "diff_permutation.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs::compare {
namespace {

// Bytes of float32 values (or stored bytes) read from each side at a time: small enough that both sides' copies stay
// in the core's cache while the sums read them.
constexpr std::size_t kSpan = std::size_t{256} << 10;
// The most float32 bytes of one head that a GGUF's permuted rows are put back in order in, per side: far above any
// real model's (128 to 256 rows of at most a few ten thousand columns), a bound on what a header can make us take.
constexpr std::uint64_t kLargestHead = std::uint64_t{64} << 20;

// Whether two tensors' stored bytes mean the same values the same way: the same decoder and block geometry.
bool same_encoding(const Tensor& a, const Tensor& b) {
    return a.type->portable == b.type->portable && a.type->block_bytes == b.type->block_bytes &&
           a.type->block_elements == b.type->block_elements && a.nbytes == b.nbytes && a.raw_in_c_order &&
           b.raw_in_c_order;
}

bool same_stored_bytes(const DiffSide& a, const DiffSide& b, std::uint32_t ta, std::uint32_t tb) {
    const Tensor& tensor_a = a.catalog().tensors[ta];
    const Tensor& tensor_b = b.catalog().tensors[tb];
    const std::uint64_t size = tensor_a.nbytes;
    std::vector<char> bytes_a(std::min<std::uint64_t>(size, kSpan)), bytes_b(bytes_a.size());
    for (std::uint64_t offset = 0; offset < size; offset += bytes_a.size()) {
        const std::size_t length = static_cast<std::size_t>(std::min<std::uint64_t>(bytes_a.size(), size - offset));
        a.files().read_of_tensor(tensor_a, tensor_a.offset + offset, length, bytes_a.data());
        b.files().read_of_tensor(tensor_b, tensor_b.offset + offset, length, bytes_b.data());
        if (std::memcmp(bytes_a.data(), bytes_b.data(), length) != 0) return false;
    }
    return true;
}

// Reads the float32 values of both tensors of a pair in step and adds them to `sums`.
class ValueStreams {
public:
    ValueStreams(DiffSide& a, DiffSide& b, const TensorPair& pair, const std::function<void(std::uint64_t)>& progressed)
        : a_(a), b_(b), pair_(pair), progressed_(progressed) {}

    // The values in the order both files hold them, summed where the decoded chunks hold them (copied first only
    // when the GGUF's values are to be shifted).
    void add_in_order(DiffSums& sums) {
        const std::uint64_t size = a_.catalog().tensors[*pair_.a].f32_bytes();
        for (std::uint64_t offset = 0; offset < size; offset += kSpan) {
            const std::size_t length = static_cast<std::size_t>(std::min<std::uint64_t>(kSpan, size - offset));
            if (pair_.added != 0) {
                buffer_a_.resize(length / 4);
                buffer_b_.resize(length / 4);
                read_span(offset, length);
                sums.add(buffer_a_.data(), buffer_b_.data(), length / 4);
            } else {
                find_pieces(offset, length);
                add_pieces(sums);
            }
        }
    }

    // The GGUF side's rows taken back to the Hugging Face order, one head at a time (the converter moved rows only
    // within a head).
    void add_unpermuted(DiffSums& sums) {
        const Tensor& tensor = a_.catalog().tensors[*pair_.a];
        if (tensor.elements == 0) return;
        const std::uint64_t rows = tensor.shape.empty() ? 1 : tensor.shape.front();
        const std::uint64_t heads = pair_.permuted_heads;
        if (!permutable(rows, heads)) {
            throw std::runtime_error(single_line(tensor.name) + ": its " + std::to_string(rows) +
                                     " rows do not split into " + std::to_string(heads) +
                                     " heads of an even number of rows, as the GGUF's head count says they should");
        }
        const std::uint64_t columns = tensor.elements / rows;
        const std::uint64_t head_rows = rows / heads;
        if (columns > kLargestHead / 4 / head_rows) {
            throw std::runtime_error(single_line(tensor.name) + ": a head of " + std::to_string(head_rows) +
                                     " rows of " + std::to_string(columns) +
                                     " values is more than diff puts back in order (" +
                                     std::to_string(kLargestHead >> 20) + " MiB)");
        }
        const std::size_t head_bytes = static_cast<std::size_t>(head_rows * columns * 4);
        buffer_a_.resize(head_bytes / 4);
        buffer_b_.resize(head_bytes / 4);
        const float* hf = pair_.gguf_is_a ? buffer_b_.data() : buffer_a_.data();
        const float* gguf = pair_.gguf_is_a ? buffer_a_.data() : buffer_b_.data();
        for (std::uint64_t head = 0; head < heads; ++head) {
            read_span(head * head_bytes, head_bytes);
            for (std::uint64_t row = 0; row < head_rows; ++row) {
                const float* hf_row = hf + row * columns;
                const float* gguf_row = gguf + gguf_row_of(row, head_rows, 1) * columns;
                if (pair_.gguf_is_a) {
                    sums.add(gguf_row, hf_row, columns);
                } else {
                    sums.add(hf_row, gguf_row, columns);
                }
            }
        }
    }

private:
    using Piece = DequantReader::Piece;

    // The parts of decoded chunks that hold bytes [offset, offset + length) of both sides' values.
    void find_pieces(std::uint64_t offset, std::size_t length) {
        pieces_a_.clear();
        pieces_b_.clear();
        a_.values().read_pieces(*pair_.a, offset, length, pieces_a_);
        b_.values().read_pieces(*pair_.b, offset, length, pieces_b_);
        progressed_(2 * std::uint64_t{length});
    }

    static const float* floats_of(const Piece& piece, std::size_t used) {
        return reinterpret_cast<const float*>(piece.chunk->data() + piece.offset + used);
    }

    // Sums the pieces of both sides in step: their chunks split the values at different places.
    void add_pieces(DiffSums& sums) const {
        std::size_t next_a = 0, next_b = 0, used_a = 0, used_b = 0;
        while (next_a < pieces_a_.size() && next_b < pieces_b_.size()) {
            const Piece& piece_a = pieces_a_[next_a];
            const Piece& piece_b = pieces_b_[next_b];
            const std::size_t bytes = std::min(piece_a.length - used_a, piece_b.length - used_b);
            sums.add(floats_of(piece_a, used_a), floats_of(piece_b, used_b), bytes / 4);
            used_a += bytes;
            used_b += bytes;
            if (used_a == piece_a.length) {
                ++next_a;
                used_a = 0;
            }
            if (used_b == piece_b.length) {
                ++next_b;
                used_b = 0;
            }
        }
    }

    static void copy_pieces(const std::vector<Piece>& pieces, float* values) {
        char* to = reinterpret_cast<char*>(values);
        for (const Piece& piece : pieces) {
            std::memcpy(to, piece.chunk->data() + piece.offset, piece.length);
            to += piece.length;
        }
    }

    // Both sides' values at [offset, offset + length) copied into the buffers, the GGUF's shifted back.
    void read_span(std::uint64_t offset, std::size_t length) {
        find_pieces(offset, length);
        copy_pieces(pieces_a_, buffer_a_.data());
        copy_pieces(pieces_b_, buffer_b_.data());
        if (pair_.added != 0) {
            float* gguf = pair_.gguf_is_a ? buffer_a_.data() : buffer_b_.data();
            for (std::size_t i = 0; i < length / 4; ++i) gguf[i] -= pair_.added;
        }
    }

    DiffSide& a_;
    DiffSide& b_;
    const TensorPair& pair_;
    const std::function<void(std::uint64_t)>& progressed_;
    std::vector<Piece> pieces_a_, pieces_b_;
    std::vector<float> buffer_a_, buffer_b_;
};

}  // namespace

std::uint64_t values_bytes(const DiffSide& a, const DiffSide& b, const TensorPair& pair) {
    if (!pair.a || !pair.b) return 0;
    const Tensor& ta = a.catalog().tensors[*pair.a];
    const Tensor& tb = b.catalog().tensors[*pair.b];
    if (ta.shape != tb.shape || !ta.type->has_dequant() || !tb.type->has_dequant()) return 0;
    return ta.f32_bytes() + tb.f32_bytes();
}

PairResult compare_pair(DiffSide& a, DiffSide& b, const TensorPair& pair,
                        const std::function<void(std::uint64_t)>& progressed) {
    PairResult result;
    result.pair = pair;
    if (!pair.b) {
        result.status = PairStatus::OnlyInA;
        return result;
    }
    if (!pair.a) {
        result.status = PairStatus::OnlyInB;
        return result;
    }
    const Tensor& ta = a.catalog().tensors[*pair.a];
    const Tensor& tb = b.catalog().tensors[*pair.b];
    if (ta.shape != tb.shape) {
        result.status = PairStatus::ShapeMismatch;
        return result;
    }
    const bool rearranged = pair.permuted_heads != 0 || pair.added != 0;
    result.values_compared = ta.type->has_dequant() && tb.type->has_dequant();
    if (result.values_compared) {
        ValueStreams streams(a, b, pair, progressed);
        if (pair.permuted_heads != 0) {
            streams.add_unpermuted(result.sums);
        } else {
            streams.add_in_order(result.sums);
        }
    }
    // Values that differ come from bytes that differ: the stored bytes are read only when the values are equal.
    const bool values_equal = result.values_compared && result.sums.differing == 0;
    const bool may_be_same_bytes = (values_equal || !result.values_compared) && !rearranged && same_encoding(ta, tb);
    result.bytes_identical = may_be_same_bytes && same_stored_bytes(a, b, *pair.a, *pair.b);
    const bool equal = result.values_compared ? values_equal : result.bytes_identical;
    result.status = equal ? PairStatus::Identical : PairStatus::Different;
    return result;
}

}  // namespace tensorfs::compare
