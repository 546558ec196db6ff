#include "tensorfs/content.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "tensorfs/json_files.hpp"
#include "npy.hpp"
#include "tensorfs/safetensors_dtypes.hpp"

namespace tensorfs {
namespace {

std::optional<ValueView> view_of(NodeKind kind) {
    switch (kind) {
        case NodeKind::DequantF32: return ValueView::F32;
        case NodeKind::DequantBf16: return ValueView::BF16;
        case NodeKind::DequantF16: return ValueView::F16;
        default: return std::nullopt;
    }
}

}  // namespace

void ReadPieces::add(const void* data, std::size_t length) {
    if (length == 0) return;
    if (length < kCopiedBelow) {
        std::memcpy(add_room(length), data, length);
        return;
    }
    iov_.push_back(iovec{const_cast<void*>(data), length});
    size_ += length;
}

char* ReadPieces::add_room(std::size_t length) {
    if (!copies_) copies_ = std::make_unique_for_overwrite<char[]>(copies_capacity_);
    // Content never asks for more than the read's length in all.
    if (copies_used_ + length > copies_capacity_) throw std::logic_error("ReadPieces: more bytes than expected");
    char* room = copies_.get() + copies_used_;
    if (!iov_.empty() && static_cast<char*>(iov_.back().iov_base) + iov_.back().iov_len == room) {
        iov_.back().iov_len += length;
    } else {
        iov_.push_back(iovec{room, length});
    }
    copies_used_ += length;
    size_ += length;
    return room;
}

void ReadPieces::add_file_span(SourceObject::FileSpan span) {
    iov_.push_back(iovec{nullptr, span.length});
    size_ += span.length;
    file_spans_.push_back(std::move(span));
}

void ReadPieces::copy_to(char* dst) const {
    if (!file_spans_.empty()) throw std::logic_error("ReadPieces: file spans are not copied");
    for (const iovec& piece : iov_) {
        std::memcpy(dst, piece.iov_base, piece.iov_len);
        dst += piece.iov_len;
    }
}

Content::Content(const Catalog& catalog, const Tree& tree, const SourceFiles& files, Stats& stats,
                 std::uint64_t cache_budget, const ModelExport* model_export)
    : catalog_(catalog),
      files_(files),
      stats_(stats),
      model_export_(model_export),
      dequant_(catalog, files, stats, cache_budget),
      model_json_(render_json_file(model_meta(catalog, tree, model_export))),
      meta_json_sizes_(std::make_unique<std::atomic<std::uint32_t>[]>(catalog.tensors.size())) {
    raw_views_.reserve(catalog.tensors.size());
    for (const auto& tensor : catalog.tensors) {
        raw_views_.push_back(tensor.raw_in_c_order ? view_stored_as(*tensor.type) : std::nullopt);
    }
}

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
    return described.has_values() ? npy_header_f32(described.shape) : std::string();
}

std::optional<std::uint32_t> Content::whole_file_of(Node node) const {
    if (node.kind == NodeKind::SideFile) return files_.side_file(node.tensor);
    if (node.kind == NodeKind::SourceFile) return files_.source_file(node.tensor);
    return std::nullopt;
}

std::optional<timespec> Content::modified(Node node) const {
    const auto file = whole_file_of(node);
    if (!file) return std::nullopt;
    return files_.file(*file).modified();
}

bool Content::unopened(Node node) const {
    const auto file = whole_file_of(node);
    return file && files_.unopened(*file);
}

std::uint64_t Content::size(Node node) const {
    if (const auto file = whole_file_of(node)) return files_.file(*file).size();
    switch (node.kind) {
        case NodeKind::ModelJson: return model_json_.size();
        case NodeKind::ModelSafetensors: return model_export_ ? model_export_->size() : 0;
        case NodeKind::StatsJson: return kStatsJsonSize;
        case NodeKind::Metrics: return stats_.metrics_size();
        case NodeKind::Raw: return catalog_.tensors[node.tensor].nbytes;
        case NodeKind::MetaJson: return meta_json_size(node.tensor);
        case NodeKind::DequantNpy: return npy_header(node.tensor).size() + catalog_.tensors[node.tensor].f32_bytes();
        default: break;
    }
    if (const auto view = view_of(node.kind)) return catalog_.tensors[node.tensor].elements * bytes_per_value(*view);
    return 0;  // directories
}

bool Content::serves_raw(Node node) const {
    if (node.kind == NodeKind::Raw || whole_file_of(node)) return true;
    const auto view = view_of(node.kind);
    return view && raw_views_[node.tensor] == view;
}

FileKindCounters* Content::counters_of(NodeKind kind) const {
    switch (kind) {
        case NodeKind::Raw: return &stats_.raw;
        case NodeKind::DequantF32: return &stats_.dequant_f32;
        case NodeKind::DequantNpy: return &stats_.dequant_npy;
        case NodeKind::DequantBf16: return &stats_.dequant_bf16;
        case NodeKind::DequantF16: return &stats_.dequant_f16;
        case NodeKind::ModelSafetensors: return &stats_.model_safetensors;
        case NodeKind::SideFile:
        case NodeKind::SourceFile: return &stats_.source_files;
        case NodeKind::ModelJson:
        case NodeKind::MetaJson:
        case NodeKind::StatsJson:
        case NodeKind::Metrics: return &stats_.json;
        default: return nullptr;
    }
}

std::optional<Content::FileSlice> Content::source_range(Node node, std::uint64_t offset, std::size_t length) const {
    if (const auto file = whole_file_of(node)) {
        const std::uint64_t size = files_.file(*file).size();
        const std::size_t count = offset >= size ? 0 : std::min<std::uint64_t>(length, size - offset);
        return FileSlice{nullptr, *file, offset, count};
    }
    if (!serves_raw(node)) return std::nullopt;
    const Tensor& tensor = catalog_.tensors[node.tensor];
    const std::size_t count = offset >= tensor.nbytes ? 0 : std::min<std::uint64_t>(length, tensor.nbytes - offset);
    return FileSlice{&tensor, tensor.file, tensor.offset + offset, count};
}

std::optional<Content::FileSlice> Content::source_slice(Node node, std::uint64_t offset, std::size_t length) const {
    const auto slice = source_range(node, offset, length);
    if (slice) count_source_read(node, *slice);
    return slice;
}

void Content::count_source_read(Node node, const FileSlice& slice) const {
    FileKindCounters& counters = *counters_of(node.kind);
    counters.reads.add(1);
    counters.bytes.add(slice.length);
}

void Content::add_text(const std::string& text, std::uint64_t offset, std::size_t length, ReadPieces& pieces) {
    if (offset >= text.size()) return;
    pieces.add(text.data() + offset, std::min<std::uint64_t>(length, text.size() - offset));
}

void Content::add_source_bytes(const FileSlice& slice, ReadPieces& pieces) const {
    FileSlice rest = slice;
    // Spans of the disk cache's files where the bytes are there, for a reply that splices them.
    while (pieces.with_file_spans_ && rest.length > 0) {
        auto span = files_.cached_span(rest.file, rest.offset, rest.length);
        if (!span) break;
        rest.offset += span->length;
        rest.length -= span->length;
        pieces.add_file_span(std::move(*span));
    }
    // Read, never copied from a mapping: a file truncated since the mount must give an error, not a SIGBUS in
    // this process.
    if (rest.length > 0) read_slice(rest, pieces.add_room(rest.length));
}

void Content::add_values(std::uint32_t tensor, ValueView view, std::uint64_t offset, std::size_t length,
                         ReadPieces& pieces) {
    const std::size_t first = pieces.chunks_.size();
    dequant_.read_pieces(tensor, offset, length, pieces.chunks_, view);
    for (std::size_t i = first; i < pieces.chunks_.size(); ++i) {
        const DequantReader::Piece& piece = pieces.chunks_[i];
        pieces.add(piece.chunk->data() + piece.offset, piece.length);
    }
}

// Only the tensors the range covers are read (and decoded).
void Content::add_model_file(std::uint64_t offset, std::size_t length, ReadPieces& pieces) {
    const std::string& header = model_export_->header();
    add_text(header, offset, length, pieces);
    const std::uint64_t end = offset + length;
    const auto& parts = model_export_->parts();
    for (std::size_t i = model_export_->part_at(offset); i < parts.size() && parts[i].begin < end; ++i) {
        const ModelExport::Part& part = parts[i];
        const std::uint64_t from = std::max(offset, part.begin);
        const std::uint64_t to = std::min(end, part.begin + part.size);
        if (from >= to) continue;
        const Tensor& tensor = catalog_.tensors[part.tensor];
        if (part.view) {
            add_values(part.tensor, *part.view, from - part.begin, to - from, pieces);
        } else {
            add_source_bytes(FileSlice{&tensor, tensor.file, tensor.offset + (from - part.begin), to - from}, pieces);
        }
    }
}

std::size_t Content::read(Node node, std::uint64_t offset, std::size_t length, char* dst) {
    if (const auto slice = source_slice(node, offset, length)) {
        // Read, never copied from a mapping: a file truncated since the mount must give an error, not a SIGBUS
        // in this process.
        read_slice(*slice, dst);
        return slice->length;
    }
    ReadPieces pieces;
    read_pieces(node, offset, length, pieces);
    pieces.copy_to(dst);
    return pieces.size();
}

void Content::read_pieces(Node node, std::uint64_t offset, std::size_t length, ReadPieces& pieces) {
    FileKindCounters* counters = counters_of(node.kind);
    if (counters == nullptr) return;  // directories hold no bytes
    if (serves_raw(node)) {
        const FileSlice slice = *source_slice(node, offset, length);
        pieces.expect(slice.length);
        return add_source_bytes(slice, pieces);
    }
    // The text files made at each read.
    if (node.kind == NodeKind::StatsJson) pieces.text_ = stats_.render_json();
    if (node.kind == NodeKind::Metrics) pieces.text_ = stats_.render_prometheus();
    if (node.kind == NodeKind::MetaJson) pieces.text_ = meta_json(node.tensor);
    if (node.kind == NodeKind::DequantNpy) pieces.text_ = npy_header(node.tensor);
    const bool made_text =
        node.kind == NodeKind::StatsJson || node.kind == NodeKind::Metrics || node.kind == NodeKind::MetaJson;
    const std::uint64_t size = made_text ? pieces.text_.size() : this->size(node);
    const std::size_t count = offset >= size ? 0 : std::min<std::uint64_t>(length, size - offset);
    pieces.expect(count);
    counters->reads.add(1);
    counters->bytes.add(count);
    if (count == 0) return;
    switch (node.kind) {
        case NodeKind::ModelJson: return add_text(model_json_, offset, count, pieces);
        case NodeKind::StatsJson:
        case NodeKind::Metrics:
        case NodeKind::MetaJson: return add_text(pieces.text_, offset, count, pieces);
        case NodeKind::ModelSafetensors: return add_model_file(offset, count, pieces);
        case NodeKind::DequantNpy: {
            const std::string& header = pieces.text_;
            const std::size_t from_header =
                offset < header.size() ? std::min<std::uint64_t>(count, header.size() - offset) : 0;
            add_text(header, offset, from_header, pieces);
            if (count > from_header) {
                add_values(node.tensor, ValueView::F32, offset + from_header - header.size(), count - from_header,
                           pieces);
            }
            return;
        }
        default: return add_values(node.tensor, *view_of(node.kind), offset, count, pieces);
    }
}

}  // namespace tensorfs
