#include "tensorfs/content.hpp"

#include <algorithm>
#include <cstring>

#include "tensorfs/json_files.hpp"
#include "tensorfs/npy.hpp"

namespace tensorfs {
namespace {

// Copies the part of `text` at [offset, offset + length) into dst.
std::size_t read_string(const std::string& text, std::uint64_t offset, std::size_t length, char* dst) {
    if (offset >= text.size()) return 0;
    const std::size_t count = std::min<std::uint64_t>(length, text.size() - offset);
    std::memcpy(dst, text.data() + offset, count);
    return count;
}

}  // namespace

Content::Content(const Catalog& catalog, const Tree& tree, const SourceFiles& files, Stats& stats)
    : catalog_(catalog),
      files_(files),
      stats_(stats),
      dequant_(catalog, files, stats),
      model_json_(render_json_file(model_meta(catalog, tree))) {
    npy_headers_.reserve(catalog.tensors.size());
    for (const auto& tensor : catalog.tensors) {
        npy_headers_.push_back(tensor.type->has_dequant() ? npy_header_f32(tensor.shape) : std::string());
    }
}

std::string Content::meta_json(std::uint32_t tensor) const { return render_json_file(tensor_meta(catalog_, tensor)); }

const std::string& Content::npy_header(std::uint32_t tensor) const { return npy_headers_[tensor]; }

std::uint64_t Content::size(Node node) const {
    switch (node.kind) {
        case NodeKind::ModelJson: return model_json_.size();
        case NodeKind::StatsJson: return kStatsJsonSize;
        case NodeKind::Raw: return catalog_.tensors[node.tensor].nbytes;
        case NodeKind::MetaJson: return meta_json(node.tensor).size();
        case NodeKind::DequantF32: return catalog_.tensors[node.tensor].f32_bytes();
        case NodeKind::DequantNpy: return npy_headers_[node.tensor].size() + catalog_.tensors[node.tensor].f32_bytes();
        default: return 0;  // directories
    }
}

Content::FileSlice Content::raw_slice(std::uint32_t index, std::uint64_t offset, std::size_t length) const {
    const Tensor& tensor = catalog_.tensors[index];
    const std::size_t count = offset >= tensor.nbytes ? 0 : std::min<std::uint64_t>(length, tensor.nbytes - offset);
    return FileSlice{files_.fd(tensor.file), tensor.offset + offset, count};
}

std::size_t Content::read(Node node, std::uint64_t offset, std::size_t length, char* dst) {
    switch (node.kind) {
        case NodeKind::ModelJson:
            stats_.json.reads.add(1);
            return read_string(model_json_, offset, length, dst);
        case NodeKind::StatsJson:
            stats_.json.reads.add(1);
            return read_string(stats_.render_json(), offset, length, dst);
        case NodeKind::MetaJson:
            stats_.json.reads.add(1);
            return read_string(meta_json(node.tensor), offset, length, dst);
        case NodeKind::Raw: {
            const Tensor& tensor = catalog_.tensors[node.tensor];
            const FileSlice slice = raw_slice(node.tensor, offset, length);
            files_.read_exact(tensor.file, slice.offset, slice.length, dst);
            stats_.raw.reads.add(1);
            stats_.raw.bytes.add(slice.length);
            return slice.length;
        }
        case NodeKind::DequantF32: {
            const std::uint64_t size = catalog_.tensors[node.tensor].f32_bytes();
            if (offset >= size) return 0;
            const std::size_t count = std::min<std::uint64_t>(length, size - offset);
            dequant_.read(node.tensor, offset, count, dst);
            stats_.dequant_f32.reads.add(1);
            stats_.dequant_f32.bytes.add(count);
            return count;
        }
        case NodeKind::DequantNpy: {
            const std::string& header = npy_headers_[node.tensor];
            const std::uint64_t size = header.size() + catalog_.tensors[node.tensor].f32_bytes();
            if (offset >= size) return 0;
            const std::size_t count = std::min<std::uint64_t>(length, size - offset);
            const std::size_t from_header = read_string(header, offset, count, dst);
            if (count > from_header) {
                dequant_.read(node.tensor, offset + from_header - header.size(), count - from_header, dst + from_header);
            }
            stats_.dequant_npy.reads.add(1);
            stats_.dequant_npy.bytes.add(count);
            return count;
        }
        default: return 0;
    }
}

}  // namespace tensorfs
