#include "gguf_file.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "gguf_reader.hpp"
#include "tensorfs/dtype.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs::gguf {
namespace {

constexpr std::uint32_t kMaxDims = 4;
constexpr std::uint64_t kDefaultAlignment = 32;
constexpr std::uint64_t kMaxElements = static_cast<std::uint64_t>(INT64_MAX);
// The least one tensor info takes: name length, dimension count, type id, offset.
constexpr std::uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

// A tensor info as stored, with where its fields are (for error positions).
struct TensorInfo {
    std::string name;
    std::uint64_t name_at = 0;
    std::uint32_t n_dims = 0;
    std::array<std::int64_t, kMaxDims> ne{1, 1, 1, 1};
    std::uint64_t dims_at = 0;
    std::uint32_t type_id = 0;
    std::uint64_t type_at = 0;
    std::uint64_t offset = 0;  // relative to the data section
    std::uint64_t offset_at = 0;
};

void read_magic(HeaderReader& reader) {
    if (reader.size() == 0) reader.fail("empty file: not a GGUF file", 0);
    const auto magic = reader.read<std::array<char, 4>>("the magic 'GGUF'");
    if (std::string_view(magic.data(), magic.size()) != "GGUF") {
        reader.fail("bad magic " + in_quotes(std::string_view(magic.data(), magic.size())) + ", expected 'GGUF'", 0);
    }
}

std::uint32_t read_version(HeaderReader& reader) {
    const std::uint64_t at = reader.position();
    const auto version = reader.read<std::uint32_t>("the version");
    if (version == 2 || version == 3) return version;
    const std::string number = "GGUF version " + std::to_string(version);
    constexpr ErrorKind kUnsupported = ErrorKind::Unsupported;
    if (version == 1) {
        reader.fail(number + " is obsolete and not supported; only versions 2 and 3 are", at, kUnsupported);
    }
    if (version != 0 && (version & 0xFFFF) == 0) {
        reader.fail(number + " looks like a big-endian file; only little-endian versions 2 and 3 are supported", at,
                    kUnsupported);
    }
    reader.fail(number + " is not supported; only versions 2 and 3 are", at, kUnsupported);
}

// Reads one count field and checks that the rest of the file can hold that many items of at least `min_bytes`.
std::uint64_t read_count(HeaderReader& reader, const char* items, std::uint64_t min_bytes) {
    const std::uint64_t at = reader.position();
    const auto count = reader.read<std::uint64_t>(std::string("the ") + items + " count");
    if (count > reader.remaining() / min_bytes) {
        reader.fail(std::string(items) + " count " + std::to_string(count) + " cannot be true: the " +
                        std::to_string(reader.remaining()) + " bytes left in the file hold at most " +
                        std::to_string(reader.remaining() / min_bytes) + " (each takes at least " +
                        std::to_string(min_bytes) + " bytes)",
                    at);
    }
    return count;
}

// general.alignment when present: a UINT32 that is a non-zero power of two. Throws (with `problems` found so
// far) when it is not: nothing after it can be checked without the alignment.
std::uint64_t alignment_of(const Metadata& metadata, const std::string& path, Problems& problems) {
    static const std::string kKey = "general.alignment";
    const auto found = metadata.values.find(kKey);
    if (found == metadata.values.end()) return kDefaultAlignment;
    const auto& type = metadata.types[kKey].get_ref<const std::string&>();
    if (type != "UINT32") {
        problems.add(path, "general.alignment must be of type UINT32 but is " + type, metadata.position_of(kKey));
        problems.throw_if_any();
    }
    const auto value = found->get<std::uint64_t>();
    if (value == 0 || (value & (value - 1)) != 0) {
        problems.add(path, "general.alignment = " + std::to_string(value) + " is not a non-zero power of two",
                     metadata.position_of(kKey));
        problems.throw_if_any();
    }
    return value;
}

TensorInfo read_tensor_info(HeaderReader& reader, std::uint64_t index) {
    TensorInfo info;
    const std::string what = "tensor info " + std::to_string(index);
    info.name_at = reader.position();
    info.name = reader.read_string(what);
    info.dims_at = reader.position();
    info.n_dims = reader.read<std::uint32_t>(what);
    if (info.n_dims > kMaxDims) {
        reader.fail("tensor " + in_quotes(info.name) + " has " + std::to_string(info.n_dims) +
                        " dimensions; GGUF allows at most 4",
                    info.dims_at);
    }
    for (std::uint32_t d = 0; d < info.n_dims; ++d) info.ne[d] = reader.read<std::int64_t>(what);
    info.type_at = reader.position();
    info.type_id = reader.read<std::uint32_t>(what);
    info.offset_at = reader.position();
    info.offset = reader.read<std::uint64_t>(what);
    return info;
}

std::string ne_text(const TensorInfo& info) {
    std::string text = "[";
    for (std::uint32_t d = 0; d < info.n_dims; ++d) text += (d ? ", " : "") + std::to_string(info.ne[d]);
    return text + "]";
}

// Checks what one tensor info says on its own and turns it into a Tensor with its offset still relative.
// Returns false (with the problems added) when the tensor cannot be placed.
bool describe_tensor(const TensorInfo& info, std::uint64_t alignment, const std::string& path, Problems& problems,
                     Tensor& tensor) {
    const std::string name = "tensor " + in_quotes(info.name);
    for (std::uint32_t d = 0; d < info.n_dims; ++d) {
        if (info.ne[d] < 0) {
            problems.add(path, name + " has a negative size in dimension " + std::to_string(d) + ": ne " +
                                   ne_text(info), info.dims_at);
            return false;
        }
    }
    const TypeTraits* type = ggml_type_by_id(info.type_id);
    if (type == nullptr) {
        problems.add(path, name + " has unknown ggml type id " + std::to_string(info.type_id), info.type_at);
        return false;
    }
    // The product of the non-zero sizes must fit, even when another size is 0: a product that wraps around
    // (possibly to exactly 0) would otherwise pass as a small tensor.
    std::uint64_t nonzero_product = 1;
    bool has_zero = false;
    for (std::uint32_t d = 0; d < info.n_dims; ++d) {
        const auto size = static_cast<std::uint64_t>(info.ne[d]);
        if (size == 0) {
            has_zero = true;
        } else if (__builtin_mul_overflow(nonzero_product, size, &nonzero_product) || nonzero_product > kMaxElements) {
            problems.add(path, name + " has too many elements: ne " + ne_text(info) + " overflows 63 bits",
                         info.dims_at);
            return false;
        }
    }
    const std::uint64_t elements = has_zero ? 0 : nonzero_product;
    const auto row = static_cast<std::uint64_t>(info.ne[0]);  // 1 for a 0-dimensional tensor
    if (row % type->block_elements != 0) {
        problems.add(path, name + " of type " + std::string(type->name) + " has ne[0] = " + std::to_string(row) +
                               ", not a multiple of its block size " + std::to_string(type->block_elements),
                     info.dims_at);
        return false;
    }
    std::uint64_t nbytes = 0;
    if (__builtin_mul_overflow(elements / type->block_elements, std::uint64_t{type->block_bytes}, &nbytes)) {
        problems.add(path, name + " with ne " + ne_text(info) + " has a byte size that overflows 64 bits",
                     info.dims_at);
        return false;
    }
    if (info.offset % alignment != 0) {
        problems.add(path, name + " has data offset " + std::to_string(info.offset) +
                               ", not a multiple of the alignment " + std::to_string(alignment),
                     info.offset_at);
        return false;
    }
    tensor.name = info.name;
    tensor.type = type;
    tensor.shape.assign(info.ne.rbegin() + (kMaxDims - info.n_dims), info.ne.rend());
    tensor.elements = elements;
    tensor.nbytes = nbytes;
    tensor.offset = info.offset;
    return true;
}

// The whole reading; problems that do not stop it go into `problems`.
GgufFile read_file(std::shared_ptr<const SourceObject> object, Problems& problems) {
    HeaderReader reader(*object);
    GgufFile file;
    file.path = object->name();
    file.size = reader.size();
    file.object = std::move(object);
    const std::string& path = file.path;
    read_magic(reader);
    file.version = read_version(reader);
    const std::uint64_t tensor_count = read_count(reader, "tensor", kMinTensorInfoBytes);
    const std::uint64_t kv_count = read_count(reader, "key/value", kMinKeyValueBytes);

    file.metadata = read_metadata(reader, kv_count, problems);
    file.alignment = alignment_of(file.metadata, path, problems);

    // Each info is checked on its own first; where its data lies is checked once the data section is known.
    std::vector<std::uint64_t> offset_at;  // per placed tensor: where its offset field is, for errors
    std::unordered_map<std::string, std::uint64_t> index_of_name;
    for (std::uint64_t i = 0; i < tensor_count; ++i) {
        TensorInfo info = read_tensor_info(reader, i);
        Tensor tensor;
        bool placeable = describe_tensor(info, file.alignment, path, problems, tensor);
        if (info.name.empty()) {
            problems.add(path, "tensor " + std::to_string(i) + " has an empty name", info.name_at);
            placeable = false;
        } else if (const auto [seen, added] = index_of_name.emplace(info.name, i); !added) {
            problems.add(path, "duplicate tensor name " + in_quotes(info.name) + " (tensors " +
                                   std::to_string(seen->second) + " and " + std::to_string(i) + ")",
                         info.name_at);
            placeable = false;
        }
        if (placeable) {
            file.tensors.push_back(std::move(tensor));
            offset_at.push_back(info.offset_at);
        }
    }

    const std::uint64_t header_end = reader.position();
    file.data_offset = (header_end + file.alignment - 1) / file.alignment * file.alignment;
    if (tensor_count > 0 && file.data_offset > file.size) {
        problems.add(path, "the data section would start at byte " + std::to_string(file.data_offset) +
                               ", past the end of the file (" + std::to_string(file.size) + " bytes)",
                     header_end);
    }
    // In file order, every tensor's data starts at or after the end of the one before (ggml's writer leaves no
    // gap; a gap is harmless and allowed) and ends inside the file.
    std::uint64_t previous_end = 0;
    for (std::size_t i = 0; i < file.tensors.size(); ++i) {
        auto& tensor = file.tensors[i];
        const std::string name = "tensor " + in_quotes(tensor.name);
        if (tensor.offset < previous_end) {
            problems.add(path, name + " data at offset " + std::to_string(tensor.offset) +
                                   " of the data section overlaps the tensor before it, whose data ends at offset " +
                                   std::to_string(previous_end),
                         offset_at[i]);
        }
        std::uint64_t relative_end = 0;
        const bool no_overflow = !__builtin_add_overflow(tensor.offset, tensor.nbytes, &relative_end);
        const bool data_section_inside = file.data_offset <= file.size;  // else reported once, above
        if (data_section_inside && (!no_overflow || relative_end > file.size - file.data_offset)) {
            problems.add(path, name + " data (" + std::to_string(tensor.nbytes) + " bytes at offset " +
                                   std::to_string(tensor.offset) + " of the data section, which starts at byte " +
                                   std::to_string(file.data_offset) + ") runs past the end of the file (" +
                                   std::to_string(file.size) + " bytes)",
                         offset_at[i]);
        }
        if (no_overflow) previous_end = std::max(previous_end, relative_end);
        tensor.offset += file.data_offset;  // absolute; cannot wrap when no problem was found
    }
    problems.throw_if_any();
    return file;
}

}  // namespace

GgufFile read_gguf_file(std::shared_ptr<const SourceObject> file) {
    Problems problems;
    try {
        return read_file(std::move(file), problems);
    } catch (const SourceError& stopped) {
        // What stopped the reading comes after what was found before it (throw_if_any leaves `problems` empty).
        if (problems.empty()) throw;
        problems.add_all(stopped);
        problems.throw_if_any();
        throw;
    }
}

}  // namespace tensorfs::gguf
