#include "tensorfs/content.hpp"

#include <algorithm>
#include <cstring>

#include "tensorfs/json_files.hpp"
#include "tensorfs/npy.hpp"

namespace tensorfs {

void ReadPieces::add(const void* data, std::size_t length) {
    if (length == 0) return;
    iov_.push_back(iovec{const_cast<void*>(data), length});
    size_ += length;
}

void ReadPieces::copy_to(char* dst) const {
    for (const iovec& piece : iov_) {
        std::memcpy(dst, piece.iov_base, piece.iov_len);
        dst += piece.iov_len;
    }
}

Content::Content(const Catalog& catalog, const Tree& tree, const SourceFiles& files, Stats& stats,
                 std::uint64_t cache_budget)
    : catalog_(catalog),
      files_(files),
      stats_(stats),
      dequant_(catalog, files, stats, cache_budget),
      model_json_(render_json_file(model_meta(catalog, tree))),
      meta_json_sizes_(std::make_unique<std::atomic<std::uint32_t>[]>(catalog.tensors.size())) {}

std::string Content::meta_json(std::uint32_t tensor) const { return render_json_file(tensor_meta(catalog_, tensor)); }

std::uint64_t Content::meta_json_size(std::uint32_t tensor) const {
    std::uint32_t size = meta_json_sizes_[tensor].load(std::memory_order_relaxed);
    if (size == 0) {
        // Two threads may both work it out: they find the same size.
        size = static_cast<std::uint32_t>(meta_json(tensor).size());
        meta_json_sizes_[tensor].store(size, std::memory_order_relaxed);
    }
    return size;
}

std::string Content::npy_header(std::uint32_t tensor) const {
    const Tensor& described = catalog_.tensors[tensor];
    return described.type->has_dequant() ? npy_header_f32(described.shape) : std::string();
}

std::uint64_t Content::size(Node node) const {
    switch (node.kind) {
        case NodeKind::ModelJson: return model_json_.size();
        case NodeKind::StatsJson: return kStatsJsonSize;
        case NodeKind::Metrics: return stats_.metrics_size();
        case NodeKind::Raw: return catalog_.tensors[node.tensor].nbytes;
        case NodeKind::MetaJson: return meta_json_size(node.tensor);
        case NodeKind::DequantF32: return catalog_.tensors[node.tensor].f32_bytes();
        case NodeKind::DequantNpy: return npy_header(node.tensor).size() + catalog_.tensors[node.tensor].f32_bytes();
        default: return 0;  // directories
    }
}

Content::FileSlice Content::raw_range(std::uint32_t index, std::uint64_t offset, std::size_t length) const {
    const Tensor& tensor = catalog_.tensors[index];
    const std::size_t count = offset >= tensor.nbytes ? 0 : std::min<std::uint64_t>(length, tensor.nbytes - offset);
    return FileSlice{&tensor, tensor.file, tensor.offset + offset, count};
}

Content::FileSlice Content::raw_slice(std::uint32_t index, std::uint64_t offset, std::size_t length) const {
    const FileSlice slice = raw_range(index, offset, length);
    stats_.raw.reads.add(1);
    stats_.raw.bytes.add(slice.length);
    return slice;
}

void Content::add_text(const std::string& text, std::uint64_t offset, std::size_t length, ReadPieces& pieces) {
    if (offset >= text.size()) return;
    pieces.add(text.data() + offset, std::min<std::uint64_t>(length, text.size() - offset));
}

std::size_t Content::read(Node node, std::uint64_t offset, std::size_t length, char* dst) {
    if (node.kind == NodeKind::Raw) {
        // Copied with pread, never from a mapping: a file truncated since the mount must give an error, not a
        // SIGBUS in this process.
        const FileSlice slice = raw_slice(node.tensor, offset, length);
        read_slice(slice, dst);
        return slice.length;
    }
    ReadPieces pieces;
    read_pieces(node, offset, length, pieces);
    pieces.copy_to(dst);
    return pieces.size();
}

void Content::read_text(const std::string& text, std::uint64_t offset, std::size_t length, ReadPieces& pieces) {
    const std::size_t before = pieces.size();
    add_text(text, offset, length, pieces);
    stats_.json.reads.add(1);
    stats_.json.bytes.add(pieces.size() - before);
}

void Content::read_pieces(Node node, std::uint64_t offset, std::size_t length, ReadPieces& pieces) {
    switch (node.kind) {
        case NodeKind::ModelJson: return read_text(model_json_, offset, length, pieces);
        case NodeKind::StatsJson:
            pieces.text_ = stats_.render_json();
            return read_text(pieces.text_, offset, length, pieces);
        case NodeKind::Metrics:
            pieces.text_ = stats_.render_prometheus();
            return read_text(pieces.text_, offset, length, pieces);
        case NodeKind::MetaJson:
            pieces.text_ = meta_json(node.tensor);
            return read_text(pieces.text_, offset, length, pieces);
        case NodeKind::DequantF32:
        case NodeKind::DequantNpy: {
            if (node.kind == NodeKind::DequantNpy) pieces.text_ = npy_header(node.tensor);
            const std::string& header = pieces.text_;  // empty for dequant.f32
            const std::uint64_t size = header.size() + catalog_.tensors[node.tensor].f32_bytes();
            if (offset >= size) return;
            const std::size_t count = std::min<std::uint64_t>(length, size - offset);
            const std::size_t from_header = offset < header.size() ? std::min<std::uint64_t>(count, header.size() - offset) : 0;
            add_text(header, offset, from_header, pieces);
            if (count > from_header) {
                const std::size_t first = pieces.chunks_.size();
                dequant_.read_pieces(node.tensor, offset + from_header - header.size(), count - from_header,
                                     pieces.chunks_);
                for (std::size_t i = first; i < pieces.chunks_.size(); ++i) {
                    const DequantReader::Piece& piece = pieces.chunks_[i];
                    pieces.add(piece.chunk->data() + piece.offset, piece.length);
                }
            }
            FileKindCounters& counters = node.kind == NodeKind::DequantNpy ? stats_.dequant_npy : stats_.dequant_f32;
            counters.reads.add(1);
            counters.bytes.add(count);
            return;
        }
        default: return;  // raw has its own road (raw_slice); directories hold no bytes
    }
}

}  // namespace tensorfs
