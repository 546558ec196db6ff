// What each fuzz target does with one input, shared by the libFuzzer targets (tests/fuzz/fuzz_*.cpp) and by the
// unit test that replays the committed crash inputs and the seed corpus (tests/unit/test_fuzz_regressions.cpp).
//
// The parsers read files by path, so an input is written to a file in a private scratch folder first. An input
// may be refused (SourceError); anything else that escapes is a bug: a crash, a sanitizer report, an IoError
// from a source the parser accepted, or a broken promise that the checks below throw as FuzzCheckFailed.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "format/checkpoint_names.hpp"
#include "format/pickle_machine.hpp"
#include "remote/s3.hpp"
#include "remote/xml.hpp"
#include "tensorfs/catalog.hpp"
#include "tensorfs/content.hpp"
#include "tensorfs/dtype.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/f32_to_16.hpp"
#include "tensorfs/json_files.hpp"
#include "tensorfs/model_export.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/stats.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs::fuzz {

// A promise of the code under test that an input broke.
class FuzzCheckFailed : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

inline void expect(bool condition, const std::string& what) {
    if (!condition) throw FuzzCheckFailed(what);
}

// A folder of this process where inputs become files; removed at exit.
class Scratch {
public:
    static Scratch& instance() {
        static Scratch scratch;
        return scratch;
    }

    // Writes `size` bytes as the file `name` of the scratch folder and returns its path.
    std::string write(const std::string& name, const std::uint8_t* data, std::size_t size) const {
        const std::string path = (folder_ / name).string();
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) throw std::runtime_error("cannot write " + path);
        std::size_t done = 0;
        while (done < size) {
            const ssize_t wrote = ::write(fd, data + done, size - done);
            if (wrote <= 0) {
                ::close(fd);
                throw std::runtime_error("cannot write " + path);
            }
            done += static_cast<std::size_t>(wrote);
        }
        ::close(fd);
        return path;
    }

    // Copies a file of tests/data into the scratch folder under `name` (once per process).
    void provide(const std::string& test_data_file, const std::string& name) const {
        const auto target = folder_ / name;
        if (std::filesystem::exists(target)) return;
        std::filesystem::copy_file(std::string(TENSORFS_TEST_DATA) + "/" + test_data_file, target);
    }

    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    ~Scratch() {
        std::error_code ignored;
        std::filesystem::remove_all(folder_, ignored);
    }

private:
    // Named after the process: a run that crashed, or that libFuzzer ended without running destructors, leaves
    // its folder behind, and the next run removes the folders of processes that are gone.
    Scratch() {
        // /dev/shm keeps the thousands of writes per second off the disk.
        const std::filesystem::path base =
            std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
        remove_folders_of_gone_processes(base);
        folder_ = base / (std::string(kPrefix) + std::to_string(::getpid()));
        std::filesystem::remove_all(folder_);
        std::filesystem::create_directory(folder_);
    }

    static void remove_folders_of_gone_processes(const std::filesystem::path& base) {
        std::error_code ignored;
        std::vector<std::filesystem::path> gone;
        for (const auto& entry : std::filesystem::directory_iterator(base, ignored)) {
            const std::string name = entry.path().filename().string();
            if (!name.starts_with(kPrefix)) continue;
            const long pid = std::strtol(name.c_str() + kPrefix.size(), nullptr, 10);
            if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) gone.push_back(entry.path());
        }
        for (const auto& folder : gone) std::filesystem::remove_all(folder, ignored);
    }

    static constexpr std::string_view kPrefix = "tensorfs-fuzz-";
    std::filesystem::path folder_;
};

// The promises every accepted catalog makes to the tree and to Content: sizes that add up and bytes that lie
// inside their file, with no arithmetic that wraps.
inline void check_stored_tensor(const Catalog& catalog, const Tensor& tensor);

// A quantized weight: its logical shape and elements, and each part a stored tensor of the catalog's files.
inline void check_quantized(const Catalog& catalog, const Tensor& tensor) {
    const std::string who = "quantized weight '" + tensor.name + "': ";
    const Quantization& quantization = *tensor.quantization;
    expect(!quantization.parts.empty(), who + "no parts");
    const Tensor& main = quantization.parts.front().stored;
    expect(tensor.file == main.file && tensor.offset == main.offset && tensor.nbytes == main.nbytes &&
               tensor.type == main.type,
           who + "its raw bytes are not its main part's");
    std::uint64_t elements = 1;
    for (const std::uint64_t dim : tensor.shape) {
        expect(dim == 0 || elements <= UINT64_MAX / dim, who + "shape product overflows");
        elements *= dim;
    }
    expect(elements == tensor.elements && elements <= UINT64_MAX / 4, who + "elements != product of shape");
    expect(tensor.has_values() == quantization.problem.empty(), who + "values and problem disagree");
    expect(tensor.raw_in_c_order == !tensor.has_values(), who + "a decodable weight's raw bytes are no values");
    for (const QuantizedPart& part : quantization.parts) check_stored_tensor(catalog, part.stored);
}

inline void check_catalog(const Catalog& catalog) {
    expect(!catalog.files.empty(), "accepted catalog has no file");
    for (const Tensor& tensor : catalog.tensors) {
        if (tensor.quantization) {
            check_quantized(catalog, tensor);
        } else {
            check_stored_tensor(catalog, tensor);
        }
    }
}

// A tensor as its file stores it: sizes that add up, bytes inside the file.
inline void check_stored_tensor(const Catalog& catalog, const Tensor& tensor) {
    const std::string who = "tensor '" + tensor.name + "': ";
    expect(tensor.type != nullptr, who + "no type");
    expect(tensor.file < catalog.files.size(), who + "file index out of range");
    std::uint64_t elements = 1;
    for (const std::uint64_t dim : tensor.shape) {
        expect(dim == 0 || elements <= UINT64_MAX / dim, who + "shape product overflows");
        elements *= dim;
    }
    expect(elements == tensor.elements, who + "elements != product of shape");
    expect(tensor.type->block_elements > 0 && elements % tensor.type->block_elements == 0,
           who + "elements not a whole number of blocks");
    expect(tensor.blocks() <= UINT64_MAX / tensor.type->block_bytes, who + "stored size overflows");
    expect(tensor.raw_in_c_order == !tensor.strided(), who + "raw_in_c_order disagrees with its strides");
    if (tensor.strided()) {
        // A view: its bytes span from its first element to its last.
        expect(tensor.stride.size() == tensor.shape.size() && tensor.type->block_elements == 1 && elements > 0,
               who + "strides that do not fit the shape or the type");
        std::uint64_t last = 0;
        for (std::size_t d = 0; d < tensor.shape.size(); ++d) {
            expect(tensor.stride[d] == 0 || tensor.shape[d] - 1 <= (UINT64_MAX - last) / tensor.stride[d],
                   who + "stride reach overflows");
            last += (tensor.shape[d] - 1) * tensor.stride[d];
        }
        expect(last < UINT64_MAX / tensor.type->block_bytes &&
                   (last + 1) * tensor.type->block_bytes == tensor.nbytes,
               who + "nbytes != the span of its elements");
    } else {
        expect(tensor.blocks() * tensor.type->block_bytes == tensor.nbytes, who + "nbytes != blocks * block bytes");
    }
    expect(tensor.elements <= UINT64_MAX / 4, who + "float32 size overflows");
    const std::uint64_t file_size = catalog.files[tensor.file].size;
    expect(tensor.offset <= file_size && tensor.nbytes <= file_size - tensor.offset,
           who + "bytes run past the end of the file");
}

// Parses `path` as a SOURCE; nullopt when refused. An accepted source must also make a tree and its model.json.
inline std::optional<Catalog> open_checked(const std::string& path) {
    try {
        Catalog catalog = open_catalog(path);
        check_catalog(catalog);
        const Tree tree(catalog);
        const std::string model_json = render_json_file(model_meta(catalog, tree));
        expect(!model_json.empty() && model_json.back() == '\n', "model.json not rendered");
        return catalog;
    } catch (const SourceError& refused) {
        expect(!refused.problems().empty(), "a source was refused without saying why");
        for (const Problem& problem : refused.problems()) {
            expect(problem.line().find('\n') == std::string::npos, "a problem spans more than one line");
        }
        return std::nullopt;
    }
}

inline void check_safetensors_file(const std::uint8_t* data, std::size_t size) {
    open_checked(Scratch::instance().write("fuzz.safetensors", data, size));
}

// The input is an index; the three shards of the sharded vectors lie next to it, so that a weight_map naming
// them gets as far as matching their tensors.
inline void check_safetensors_index(const std::uint8_t* data, std::size_t size) {
    const Scratch& scratch = Scratch::instance();
    for (int part = 1; part <= 3; ++part) {
        const std::string shard = "model-0000" + std::to_string(part) + "-of-00003.safetensors";
        scratch.provide("vectors/safetensors/sharded/" + shard, shard);
    }
    open_checked(scratch.write("model.safetensors.index.json", data, size));
}

// The input is part 1 of the tiny-llama split set; parts 2 and 3 lie next to it, so that an input that says it
// is a split part gets as far as reading and matching its siblings. Other inputs are one GGUF file.
inline void check_gguf_file(const std::uint8_t* data, std::size_t size) {
    const Scratch& scratch = Scratch::instance();
    for (int part = 2; part <= 3; ++part) {
        const std::string name = "tiny-llama-Q4_K_M-0000" + std::to_string(part) + "-of-00003.gguf";
        scratch.provide("vectors/gguf/split/" + name, name);
    }
    open_checked(scratch.write("tiny-llama-Q4_K_M-00001-of-00003.gguf", data, size));
}

// splitmix64: the read ranges of an input follow from its bytes, so a crash replays exactly.
class Ranges {
public:
    explicit Ranges(const std::uint8_t* data, std::size_t size) {
        state_ = 0xcbf29ce484222325ull ^ size;
        for (std::size_t i = 0; i < size; ++i) state_ = (state_ ^ data[i]) * 0x100000001b3ull;
    }
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // A number in [0, bound].
    std::uint64_t up_to(std::uint64_t bound) { return bound == UINT64_MAX ? next() : next() % (bound + 1); }

private:
    std::uint64_t state_;
};

// Reads [offset, offset + length) of `node` and checks the count against the file's size.
inline std::vector<char> read_range(Content& content, Node node, std::uint64_t offset, std::size_t length) {
    std::vector<char> bytes(length);
    const std::uint64_t size = content.size(node);
    const std::size_t count = content.read(node, offset, length, bytes.data());
    const std::uint64_t expected = offset >= size ? 0 : std::min<std::uint64_t>(length, size - offset);
    expect(count == expected, "read returned " + std::to_string(count) + " bytes, not " + std::to_string(expected));
    bytes.resize(count);
    return bytes;
}

// The input is data.pkl: run by the restricted pickle machine as both formats' pickles, and when it runs, walked
// for tensor names and metadata. A refusal is a PickleError or a NamingError; nothing else may escape.
inline void check_pickle(const std::uint8_t* data, std::size_t size) {
    for (const auto ids : {pickle::StorageIds::Archive, pickle::StorageIds::Legacy}) {
        try {
            const pickle::Unpickled unpickled = pickle::unpickle({data, size}, ids);
            expect(unpickled.end <= size && unpickled.root < unpickled.objects.size(), "pickle result out of range");
            const pytorch::NamedObjects named = pytorch::name_objects(unpickled.objects, unpickled.root, "root");
            for (const auto& tensor : named.tensors) {
                expect(tensor.tensor->shape.size() == tensor.tensor->stride.size(), "tensor strides do not fit");
            }
        } catch (const pickle::PickleError& refused) {
            expect(refused.at() <= size, "a pickle refusal points past the input");
        } catch (const pytorch::NamingError&) {
        }
    }
}

// The 16-bit views' bytes that a float32 range (whole values) rounds to.
inline std::vector<char> rounded_to_16_bits(const std::vector<char>& f32, NodeKind kind) {
    std::vector<float> values(f32.size() / 4);
    if (!values.empty()) std::memcpy(values.data(), f32.data(), values.size() * 4);
    std::vector<std::uint16_t> narrowed(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        narrowed[i] = kind == NodeKind::DequantBf16 ? bf16_from_f32(values[i]) : f16_from_f32(values[i]);
    }
    std::vector<char> bytes(narrowed.size() * 2);
    if (!bytes.empty()) std::memcpy(bytes.data(), narrowed.data(), bytes.size());
    return bytes;
}

// A quantized weight's values depend on data no header check sees (a GPTQ g_idx entry naming a group that does not
// exist): a read of them may fail, with an IoError of kind InvalidSource that names the weight, and nothing else.
inline void expect_bad_part_data(const Catalog& catalog, const IoError& refused) {
    const auto named = std::find_if(catalog.tensors.begin(), catalog.tensors.end(),
                                    [&](const Tensor& tensor) { return tensor.name == refused.file(); });
    expect(named != catalog.tensors.end() && named->quantization != nullptr,
           std::string("a read failed for a tensor that is no quantized weight: ") + refused.what());
    expect(refused.kind() == ErrorKind::InvalidSource, std::string("a read failed: ") + refused.what());
    expect(std::string_view(refused.what()).find('\n') == std::string_view::npos, "a read's error is not one line");
}

// A range read whole, in two pieces (block and chunk edges must not show) and as the FUSE adapter replies to it
// (read_pieces, or the source slice of a file that is raw bytes): all the same bytes. Returns them.
inline std::vector<char> read_checked(Content& content, Node node, std::uint64_t offset, std::size_t length,
                                      Ranges& ranges, const std::string& what) {
    const std::vector<char> whole = read_range(content, node, offset, length);
    const std::size_t cut = static_cast<std::size_t>(ranges.up_to(whole.size()));
    std::vector<char> pieces = read_range(content, node, offset, cut);
    const std::vector<char> rest = read_range(content, node, offset + cut, whole.size() - cut);
    pieces.insert(pieces.end(), rest.begin(), rest.end());
    expect(pieces == whole, "'" + what + "': a range read in two pieces differs");

    // The FUSE adapter replies from this slice of the source to the files that are raw bytes, and with pieces to
    // the others.
    if (const auto slice = content.source_slice(node, offset, length)) {
        expect(slice->length == whole.size(), "'" + what + "': source slice disagrees with read");
    }
    ReadPieces replied;
    content.read_pieces(node, offset, length, replied);
    std::vector<char> joined(replied.size());
    replied.copy_to(joined.data());
    expect(joined == whole, "'" + what + "': read_pieces differs from read");
    return whole;
}

// The input is the source file `name`. When it is accepted, ranges of every file of every tensor and of
// model.safetensors are read through Content, as the FUSE adapter would, and checked against each
// other: raw against the input's bytes and its source slice, dequant.npy against its header and dequant.f32, the
// 16-bit views against dequant.f32 rounded, model.safetensors against its header and each tensor's raw bytes or
// view, read_pieces (what the FUSE adapter replies with) against read, and every range against the same range
// read in two pieces.
inline void check_content_of(const std::string& name, const std::uint8_t* data, std::size_t size) {
    const std::string path = Scratch::instance().write(name, data, size);
    const std::optional<Catalog> catalog = open_checked(path);
    if (!catalog) return;
    expect(catalog->files.size() == 1 && catalog->files[0].size == size, "catalog's file size");
    const ModelExport model_export(*catalog, static_cast<ExportDtype>(size % 4));
    const Tree tree(*catalog, model_export.available());
    const SourceFiles files(*catalog);
    Stats stats;
    // A small cache: 4 KiB chunks, evicted all the time, so chunk edges and reuse are exercised on small inputs.
    Content content(*catalog, tree, files, stats, 64 << 10, &model_export);

    Ranges ranges(data, size);
    constexpr std::uint64_t kMaxRead = 16 << 10;
    std::uint64_t budget = 4 << 20;  // bytes read per input, so that one input stays well under a second
    for (const NodeKind kind : {NodeKind::ModelJson, NodeKind::StatsJson}) {
        read_range(content, Node{kind}, ranges.up_to(content.size(Node{kind})), kMaxRead);
    }
    if (model_export.available()) try {
        const Node model{NodeKind::ModelSafetensors};
        expect(content.size(model) == model_export.size(), "model.safetensors size");
        const std::uint64_t offset = ranges.up_to(model_export.size() + 8);
        const std::size_t length = static_cast<std::size_t>(ranges.up_to(kMaxRead));
        const std::vector<char> whole = read_checked(content, model, offset, length, ranges, "model.safetensors");
        const std::string& header = model_export.header();
        for (std::size_t i = 0; i < whole.size() && offset + i < header.size(); ++i) {
            expect(whole[i] == header[offset + i], "model.safetensors: its first bytes are not its header");
        }
        for (const ModelExport::Part& part : model_export.parts()) {
            const std::uint64_t from = std::max(offset, part.begin);
            const std::uint64_t to = std::min<std::uint64_t>(offset + whole.size(), part.begin + part.size);
            if (from >= to) continue;
            const NodeKind kind = !part.view                         ? NodeKind::Raw
                                  : *part.view == ValueView::BF16 ? NodeKind::DequantBf16
                                  : *part.view == ValueView::F16  ? NodeKind::DequantF16
                                                                  : NodeKind::DequantF32;
            const std::vector<char> own =
                read_range(content, Node{kind, part.tensor}, from - part.begin, static_cast<std::size_t>(to - from));
            expect(std::equal(own.begin(), own.end(), whole.begin() + static_cast<std::ptrdiff_t>(from - offset)),
                   "model.safetensors: tensor '" + catalog->tensors[part.tensor].name + "' differs from its own file");
        }
        budget -= std::min(budget, std::uint64_t{length} * 4);
    } catch (const IoError& refused) {
        expect_bad_part_data(*catalog, refused);
    }
    for (std::uint32_t index = 0; index < catalog->tensors.size() && budget > 0; ++index) {
        const Tensor& tensor = catalog->tensors[index];
        const Node directory{NodeKind::TensorDir, index};
        for (std::size_t child = 0; child < tree.child_count(directory); ++child) {
            const Node node = tree.child(directory, child).node;
            try {
                const std::uint64_t file_size = content.size(node);
                const std::uint64_t offset = ranges.up_to(file_size + 8);
                const std::size_t length = static_cast<std::size_t>(ranges.up_to(kMaxRead));
                budget -= std::min(budget, std::uint64_t{length} * 3 + 256);  // small reads too: JSON renders
                const std::vector<char> whole = read_checked(content, node, offset, length, ranges, tensor.name);

                if (node.kind == NodeKind::Raw) {
                    expect(whole.empty() || std::memcmp(whole.data(), data + tensor.offset + offset, whole.size()) == 0,
                           "tensor '" + tensor.name + "': raw differs from the source bytes");
                    const auto slice = content.source_slice(node, offset, length);
                    expect(slice && slice->file == tensor.file &&
                               (whole.empty() || slice->offset == tensor.offset + offset),
                           "tensor '" + tensor.name + "': raw's source slice is not where its bytes are");
                }
                if (node.kind == NodeKind::DequantNpy) {
                    const std::string& header = content.npy_header(index);
                    expect(file_size == header.size() + tensor.f32_bytes(), "dequant.npy size");
                    const std::uint64_t start = std::max<std::uint64_t>(offset, header.size());
                    if (start < offset + whole.size()) {
                        const std::vector<char> f32 = read_range(content, Node{NodeKind::DequantF32, index},
                                                                 start - header.size(), offset + whole.size() - start);
                        expect(std::memcmp(f32.data(), whole.data() + (start - offset), f32.size()) == 0,
                               "tensor '" + tensor.name + "': dequant.npy differs from dequant.f32");
                    }
                }
                if ((node.kind == NodeKind::DequantBf16 || node.kind == NodeKind::DequantF16) && !whole.empty() &&
                    !content.source_slice(node, 0, 0)) {
                    // The float32 values under the range, whole values only.
                    const std::uint64_t first = offset / 2, last = (offset + whole.size() - 1) / 2;
                    const std::vector<char> f32 = read_range(content, Node{NodeKind::DequantF32, index}, first * 4,
                                                             static_cast<std::size_t>((last - first + 1) * 4));
                    const std::vector<char> rounded = rounded_to_16_bits(f32, node.kind);
                    expect(std::memcmp(rounded.data() + offset % 2, whole.data(), whole.size()) == 0,
                           "tensor '" + tensor.name + "': a 16-bit view differs from dequant.f32 rounded");
                }
            } catch (const IoError& refused) {
                expect_bad_part_data(*catalog, refused);
                expect(refused.file() == tensor.name, "a read of '" + tensor.name + "' failed naming another");
            }
        }
    }
}

// The input is a safetensors, GGUF or PyTorch file, told apart by its magic.
inline void check_content(const std::uint8_t* data, std::size_t size) {
    const bool gguf = size >= 4 && std::memcmp(data, "GGUF", 4) == 0;
    const bool pytorch = size >= 2 && (std::memcmp(data, "PK", 2) == 0 || data[0] == 0x80);
    check_content_of(gguf ? "content.gguf" : pytorch ? "content.pt" : "content.safetensors", data, size);
}

// The input is a quantized model's folder in one piece: a 4-byte little-endian length, that many bytes of
// config.json, then a safetensors file, read through Content as check_content does beside that config (its
// quantization_config and the tensors' names make the quantized weights). The config goes with the input.
inline void check_quantized_model(const std::uint8_t* data, std::size_t size) {
    if (size < 4) return;
    std::uint32_t length = 0;
    std::memcpy(&length, data, 4);
    const std::size_t config_length = std::min<std::size_t>(length, size - 4);
    struct Config {
        std::string path;
        ~Config() { std::filesystem::remove(path); }
    } config{Scratch::instance().write("config.json", data + 4, config_length)};
    check_content_of("quantized.safetensors", data + 4 + config_length, size - 4 - config_length);
}

// The input is a PyTorch checkpoint (zip archive or legacy file), read through Content as check_content does.
inline void check_pytorch_file(const std::uint8_t* data, std::size_t size) { check_content_of("fuzz.pt", data, size); }

// The ggml types that have a float32 conversion, in id order, then the safetensors dtypes that have kernels of
// their own (the 8-bit and sub-byte floats).
inline const std::vector<const TypeTraits*>& types_with_kernels() {
    static const std::vector<const TypeTraits*> types = [] {
        std::vector<const TypeTraits*> found;
        for (std::uint32_t id = 0; id < 256; ++id) {
            const TypeTraits* type = ggml_type_by_id(id);
            if (type != nullptr && type->has_dequant()) found.push_back(type);
        }
        for (const char* name : {"F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0", "F4", "F6_E2M3",
                                 "F6_E3M2"}) {
            found.push_back(safetensors_dtype_by_name(name));
        }
        return found;
    }();
    return types;
}

// The first byte picks a type, the rest are its blocks (a partial last block is dropped). The kernels decode them
// from and into buffers of exactly their size, so that ASan sees any byte read or written past the blocks, and the
// fast kernel of every path this CPU runs must give the portable kernel's bits exactly (NaN payloads too).
inline void check_kernels(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return;
    const TypeTraits& type = *types_with_kernels()[data[0] % types_with_kernels().size()];
    const std::size_t blocks = std::min<std::size_t>((size - 1) / type.block_bytes, 4096);
    if (blocks == 0) return;
    const std::vector<std::uint8_t> stored(data + 1, data + 1 + blocks * type.block_bytes);
    std::vector<float> portable(blocks * type.block_elements);
    type.portable(stored.data(), blocks, portable.data());
    for (const KernelPath path : {KernelPath::avx2, KernelPath::avx512}) {
        const DequantKernel fast = path == KernelPath::avx2 ? type.avx2 : type.avx512;
        if (fast == nullptr || path > cpu_kernel_path()) continue;
        std::vector<float> decoded(blocks * type.block_elements);
        fast(stored.data(), blocks, decoded.data());
        expect(std::memcmp(portable.data(), decoded.data(), decoded.size() * sizeof(float)) == 0,
               std::string(type.name) + ": the " + std::string(kernel_path_name(path)) +
                   " kernel differs from the portable one");
    }
}

// An answer of an S3 store (a ListObjectsV2 page, an error document) as the remote layer reads it: the XML reader
// gives a tree or refuses with XmlError at a byte of the input, the listing reader gives keys or refuses with
// std::runtime_error; nothing else escapes.
inline void check_s3_answer(const std::uint8_t* data, std::size_t size) {
    const std::string body(reinterpret_cast<const char*>(data), size);
    try {
        remote::parse_xml(body);
    } catch (const remote::XmlError& error) {
        expect(error.at() <= size, "XmlError at a byte past the end of the input");
    }
    try {
        const remote::S3ListingPage page = remote::read_listing_page(body);
        std::size_t key_bytes = 0;
        for (const auto& key : page.keys) key_bytes += key.size();
        expect(key_bytes <= size, "listing keys longer than the input");
    } catch (const std::runtime_error&) {
        // Refused: not a listing.
    }
}

}  // namespace tensorfs::fuzz
