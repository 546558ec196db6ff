// Each scheme's parts, checked against each other before any value is made from them. The stored layouts are those
// of the references the decoders follow (src/vfs/quantized_values.cpp): shapes come from headers that the parsers
// checked against the files, so every product of dimensions below is bounded by a file's size.
#include "quantized_weights.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_map>

#include "tensorfs/errors.hpp"
#include "tensorfs/in_parallel.hpp"
#include "tensorfs/safetensors_dtypes.hpp"

namespace tensorfs {
namespace {

using Shape = std::vector<std::uint64_t>;
using Index = std::unordered_map<std::string_view, std::uint32_t>;

constexpr std::array<std::string_view, 7> kSchemeNames{"fp8-block", "fp8",  "mxfp4",         "nvfp4",
                                                       "gptq",      "awq",  "pack-quantized"};

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

std::string shape_text(const Shape& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) text += (i > 0 ? "," : "") + std::to_string(shape[i]);
    return text + "]";
}

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() > suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Whether `type` stores the safetensors dtype `name` (the same dtype under PyTorch's or GGUF's name too).
bool stores(const TypeTraits& type, std::string_view name) { return safetensors_dtype_of(type) == name; }

bool stores_float_scale(const TypeTraits& type) {
    return stores(type, "F32") || stores(type, "BF16") || stores(type, "F16");
}

// The parts of one weight found by name, before their shapes are checked.
struct Candidate {
    std::uint32_t main;
    QuantScheme scheme;
    std::string logical_name;
    std::string main_role;
    std::vector<std::pair<std::string, std::uint32_t>> parts;  // role, tensor: the other parts found
};

// A weight whose parts are being checked: the first problem found stops it.
class WeightCheck {
public:
    WeightCheck(const Catalog& catalog, const Candidate& candidate, Quantization& quantization)
        : catalog_(catalog), candidate_(candidate), q_(quantization) {}

    const Tensor& main() const { return catalog_.tensors[candidate_.main]; }
    const Tensor* part(std::string_view role) const {
        for (const auto& [name, index] : candidate_.parts) {
            if (name == role) return &catalog_.tensors[index];
        }
        return nullptr;
    }
    bool failed() const { return !q_.problem.empty(); }
    void fail(std::string what) {
        if (!failed()) q_.problem = std::move(what);
    }

    // The part `role`, required: a problem when it is missing.
    const Tensor* needed(std::string_view role) {
        const Tensor* found = part(role);
        if (found == nullptr) fail("its part " + std::string(role) + " is missing");
        return found;
    }
    bool dtype_is(const Tensor* tensor, std::string_view role, bool fits, std::string_view wanted) {
        if (tensor == nullptr || failed()) return false;
        if (!fits) {
            fail(std::string(role) + " has dtype " + std::string(tensor->type->name) + "; " + scheme_label() +
                 " wants " + std::string(wanted));
        }
        return fits;
    }
    bool shape_is(const Tensor* tensor, std::string_view role, const Shape& wanted) {
        if (tensor == nullptr || failed()) return false;
        if (tensor->shape != wanted) {
            fail(std::string(role) + " has shape " + shape_text(tensor->shape) + " where " + scheme_label() +
                 " wants " + shape_text(wanted));
        }
        return !failed();
    }
    bool rank_is(const Tensor& tensor, std::string_view role, std::size_t rank) {
        if (failed()) return false;
        if (tensor.shape.size() != rank) {
            fail(std::string(role) + " has shape " + shape_text(tensor.shape) + "; " + scheme_label() + " wants " +
                 std::to_string(rank) + " dimensions");
        }
        return !failed();
    }

private:
    std::string scheme_label() const { return std::string(scheme_name(q_.scheme)); }

    const Catalog& catalog_;
    const Candidate& candidate_;
    Quantization& q_;
};

// The one bits value the config names, when it names exactly one.
std::optional<unsigned> declared_bits(const DeclaredQuantization* declared) {
    if (declared == nullptr || declared->bits.size() != 1) return std::nullopt;
    return declared->bits.front();
}

bool supported_integer_bits(unsigned bits) { return bits == 2 || bits == 4 || bits == 8; }

// fp8-block and fp8: an F8_E4M3 [out, in] weight times one scale per block of the grid the scale's shape gives.
Shape check_fp8(WeightCheck& check, Quantization& q, const DeclaredQuantization* declared) {
    const Tensor& weight = check.main();
    const bool inverse = q.scheme == QuantScheme::Fp8Block;
    const std::string role = inverse ? "weight_scale_inv" : "weight_scale";
    const Tensor* scale = check.needed(role);
    if (check.failed()) return {};
    check.dtype_is(&weight, "weight", stores(*weight.type, "F8_E4M3"), "F8_E4M3");
    check.dtype_is(scale, role, stores_float_scale(*scale->type), "F32, BF16 or F16");
    if (!check.rank_is(weight, "weight", 2)) return {};
    const std::uint64_t out = weight.shape[0], in = weight.shape[1];
    q.bits = 8;
    if (scale->elements == 1) {   // one scale for the tensor
        q.scheme = QuantScheme::Fp8;
        q.block_rows = std::max<std::uint64_t>(out, 1);
        q.block_columns = std::max<std::uint64_t>(in, 1);
        return weight.shape;
    }
    if (scale->shape == Shape{out, 1} || scale->shape == Shape{out}) {   // one per row
        q.scheme = QuantScheme::Fp8;
        q.block_rows = 1;
        q.block_columns = std::max<std::uint64_t>(in, 1);
        return weight.shape;
    }
    // A grid of blocks: the config's block size, else the 128 x 128 of every published block-scaled model.
    q.scheme = QuantScheme::Fp8Block;
    const bool said = declared != nullptr && declared->block_rows > 0;
    q.block_rows = said ? declared->block_rows : 128;
    q.block_columns = said ? declared->block_columns : 128;
    const Shape grid{ceil_div(out, q.block_rows), ceil_div(in, q.block_columns)};
    if (scale->shape != grid) {
        check.fail(role + " has shape " + shape_text(scale->shape) + ", which is not the grid " + shape_text(grid) +
                   " of " + std::to_string(q.block_rows) + "x" + std::to_string(q.block_columns) + " blocks (" +
                   (said ? "weight_block_size" : "no weight_block_size in the config; assumed") + ") over " +
                   shape_text(weight.shape));
        return {};
    }
    return weight.shape;
}

// NVFP4 (ModelOpt): a U8 [out, in/2] weight, F8_E4M3 [out, in/16] block scales and one F32 global scale.
Shape check_nvfp4(WeightCheck& check, Quantization& q) {
    const Tensor& weight = check.main();
    const Tensor* scale = check.needed("weight_scale");
    const Tensor* global = check.needed("weight_scale_2");
    if (check.failed()) return {};
    check.dtype_is(&weight, "weight", stores(*weight.type, "U8"), "U8 (two values a byte)");
    check.dtype_is(scale, "weight_scale", stores(*scale->type, "F8_E4M3"), "F8_E4M3");
    check.dtype_is(global, "weight_scale_2", stores_float_scale(*global->type), "F32, BF16 or F16");
    if (!check.rank_is(weight, "weight", 2) || check.failed()) return {};
    q.bits = 4;
    q.group_size = 16;
    const std::uint64_t out = weight.shape[0], in = weight.shape[1] * 2;
    if (!check.shape_is(scale, "weight_scale", {out, ceil_div(in, 16)})) return {};
    if (global->elements != 1) {
        check.fail("weight_scale_2 has shape " + shape_text(global->shape) + "; nvfp4 wants one value");
        return {};
    }
    return {out, in};
}

// MXFP4 (gpt-oss in transformers' layout): U8 blocks [E, R, G, 16], U8 exponents [E, R, G]; logical [E, G*32, R].
Shape check_mxfp4(WeightCheck& check, Quantization& q) {
    const Tensor& blocks = check.main();
    const Tensor* scales = check.needed("scales");
    if (check.failed()) return {};
    check.dtype_is(&blocks, "blocks", stores(*blocks.type, "U8"), "U8");
    check.dtype_is(scales, "scales", stores(*scales->type, "U8"), "U8 (E8M0 exponents)");
    if (!check.rank_is(blocks, "blocks", 4) || check.failed()) return {};
    q.bits = 4;
    q.group_size = 32;
    const Shape& b = blocks.shape;
    if (b[3] != 16) {
        check.fail("blocks has shape " + shape_text(b) + "; mxfp4 wants 16 bytes (32 values) in its last dimension");
        return {};
    }
    if (!check.shape_is(scales, "scales", {b[0], b[1], b[2]})) return {};
    return {b[0], b[2] * 32, b[1]};
}

// GPTQ: I32 qweight [in*bits/32, out] packed along the input rows, qzeros [G, out*bits/32], scales [G, out], g_idx
// [in].
Shape check_gptq(WeightCheck& check, Quantization& q, const DeclaredQuantization* declared) {
    const Tensor& qweight = check.main();
    const Tensor* qzeros = check.needed("qzeros");
    const Tensor* scales = check.needed("scales");
    const Tensor* g_idx = check.part("g_idx");
    if (check.failed()) return {};
    check.dtype_is(&qweight, "qweight", stores(*qweight.type, "I32"), "I32");
    check.dtype_is(qzeros, "qzeros", stores(*qzeros->type, "I32"), "I32");
    check.dtype_is(scales, "scales", stores_float_scale(*scales->type), "F16, BF16 or F32");
    if (g_idx != nullptr) check.dtype_is(g_idx, "g_idx", stores(*g_idx->type, "I32"), "I32");
    if (!check.rank_is(qweight, "qweight", 2) || !check.rank_is(*scales, "scales", 2) ||
        !check.rank_is(*qzeros, "qzeros", 2)) {
        return {};
    }
    if (g_idx != nullptr && !check.rank_is(*g_idx, "g_idx", 1)) return {};
    const std::uint64_t packed_rows = qweight.shape[0], out = qweight.shape[1], groups = scales->shape[0];
    // Bits: the config's, else what g_idx's length (the input rows) and qweight's rows give.
    std::optional<unsigned> bits = declared_bits(declared);
    if (!bits && g_idx != nullptr && packed_rows > 0 && g_idx->elements % packed_rows == 0) {
        bits = static_cast<unsigned>(32 / std::max<std::uint64_t>(1, g_idx->elements / packed_rows));
    }
    q.bits = bits.value_or(4);
    if (!supported_integer_bits(q.bits)) {
        check.fail("bits " + std::to_string(q.bits) + " is not decoded (gptq: 2, 4 or 8)");
        return {};
    }
    const std::uint64_t per_word = 32 / q.bits;
    const std::uint64_t in = g_idx != nullptr ? g_idx->elements : packed_rows * per_word;
    if (ceil_div(in, per_word) != packed_rows) {
        check.fail("g_idx has " + std::to_string(in) + " entries, but qweight's " + std::to_string(packed_rows) +
                   " rows hold " + std::to_string(packed_rows * per_word) + " input rows of " +
                   std::to_string(q.bits) + " bits");
        return {};
    }
    if (!check.shape_is(scales, "scales", {groups, out})) return {};
    if (!check.shape_is(qzeros, "qzeros", {groups, ceil_div(out, per_word)})) return {};
    if (groups == 0 && in > 0) {
        check.fail("scales has no group");
        return {};
    }
    const bool per_row = declared != nullptr && declared->per_row;
    q.group_size = per_row ? in : (declared != nullptr && declared->group_size > 0 ? declared->group_size
                                                                                   : ceil_div(in, groups));
    if (g_idx == nullptr) {
        if (declared != nullptr && declared->desc_act) {
            check.fail("its part g_idx is missing, which desc_act (act-order) needs");
            return {};
        }
        if (ceil_div(in, std::max<std::uint64_t>(q.group_size, 1)) != groups) {
            check.fail("group_size " + std::to_string(q.group_size) + " over " + std::to_string(in) +
                       " input rows makes " + std::to_string(ceil_div(in, std::max<std::uint64_t>(q.group_size, 1))) +
                       " groups, but scales has " + std::to_string(groups));
            return {};
        }
    }
    q.zeros_less_one = declared == nullptr || !declared->gptq_v2;
    return {out, in};
}

// AWQ (GEMM): I32 qweight [in, out/8], qzeros [G, out/8], scales [G, out]; 4 bits.
Shape check_awq(WeightCheck& check, Quantization& q, const DeclaredQuantization* declared) {
    const Tensor& qweight = check.main();
    const Tensor* qzeros = check.needed("qzeros");
    const Tensor* scales = check.needed("scales");
    if (check.failed()) return {};
    check.dtype_is(&qweight, "qweight", stores(*qweight.type, "I32"), "I32");
    check.dtype_is(qzeros, "qzeros", stores(*qzeros->type, "I32"), "I32");
    check.dtype_is(scales, "scales", stores_float_scale(*scales->type), "F16, BF16 or F32");
    if (!check.rank_is(qweight, "qweight", 2) || !check.rank_is(*scales, "scales", 2)) return {};
    q.bits = declared_bits(declared).value_or(4);
    if (q.bits != 4) {
        check.fail("bits " + std::to_string(q.bits) + " is not decoded (awq: 4)");
        return {};
    }
    const std::uint64_t in = qweight.shape[0], groups = scales->shape[0], out = scales->shape[1];
    if (!check.shape_is(&qweight, "qweight", {in, ceil_div(out, 8)})) return {};
    if (!check.shape_is(qzeros, "qzeros", {groups, ceil_div(out, 8)})) return {};
    if (groups == 0 && in > 0) {
        check.fail("scales has no group");
        return {};
    }
    q.group_size = declared != nullptr && declared->group_size > 0 ? declared->group_size : ceil_div(in, groups);
    if (ceil_div(in, q.group_size) != groups) {
        check.fail("group_size " + std::to_string(q.group_size) + " over " + std::to_string(in) +
                   " input rows makes " + std::to_string(ceil_div(in, q.group_size)) + " groups, but scales has " +
                   std::to_string(groups));
        return {};
    }
    return {out, in};
}

// The two values of a weight_shape part, read from its file; nullopt (and a problem) when they cannot be.
std::optional<Shape> read_weight_shape(const Catalog& catalog, WeightCheck& check, const Tensor& part) {
    const bool wide = stores(*part.type, "I64");
    if (!check.dtype_is(&part, "weight_shape", wide || stores(*part.type, "I32"), "I64 or I32")) return std::nullopt;
    if (part.shape != Shape{2}) {
        check.fail("weight_shape has shape " + shape_text(part.shape) + "; pack-quantized wants [2]");
        return std::nullopt;
    }
    std::array<unsigned char, 16> bytes{};
    try {
        catalog.files[part.file].object->read(part.offset, wide ? 16 : 8, bytes.data());
    } catch (const IoError& error) {
        check.fail(std::string("weight_shape cannot be read: ") + error.reason());
        return std::nullopt;
    }
    Shape shape;
    for (int i = 0; i < 2; ++i) {
        std::int64_t value = 0;
        if (wide) {
            std::memcpy(&value, bytes.data() + 8 * i, 8);
        } else {
            std::int32_t narrow = 0;
            std::memcpy(&narrow, bytes.data() + 4 * i, 4);
            value = narrow;
        }
        if (value < 0) {
            check.fail("weight_shape holds a negative size " + std::to_string(value));
            return std::nullopt;
        }
        shape.push_back(static_cast<std::uint64_t>(value));
    }
    return shape;
}

// compressed-tensors pack-quantized: I32 weight_packed [out, ceil(in*bits/32)], weight_shape [2] = [out, in],
// weight_scale [out, G] (or one value), weight_zero_point packed along dim 0 [ceil(out*bits/32), G] (asymmetric),
// weight_g_idx [in] (act-order).
Shape check_pack_quantized(const Catalog& catalog, WeightCheck& check, Quantization& q,
                           const DeclaredQuantization* declared) {
    const Tensor& packed = check.main();
    const Tensor* scale = check.needed("weight_scale");
    const Tensor* shape_part = check.needed("weight_shape");
    const Tensor* zero_point = check.part("weight_zero_point");
    const Tensor* g_idx = check.part("weight_g_idx");
    if (check.failed()) return {};
    check.dtype_is(&packed, "weight_packed", stores(*packed.type, "I32"), "I32");
    check.dtype_is(scale, "weight_scale", stores_float_scale(*scale->type), "F32, BF16 or F16");
    if (g_idx != nullptr) check.dtype_is(g_idx, "weight_g_idx", stores(*g_idx->type, "I32"), "I32");
    if (!check.rank_is(packed, "weight_packed", 2) || check.failed()) return {};
    const std::optional<Shape> logical = read_weight_shape(catalog, check, *shape_part);
    if (!logical) return {};
    const std::uint64_t out = (*logical)[0], in = (*logical)[1], words = packed.shape[1];
    // Bits: the config's when it names one, else the one that packs `in` values into the row's words.
    std::optional<unsigned> bits = declared_bits(declared);
    for (unsigned candidate : {4u, 8u, 2u}) {
        if (!bits && ceil_div(in * candidate, 32) == words) bits = candidate;
    }
    q.bits = bits.value_or(0);
    if (!supported_integer_bits(q.bits)) {
        check.fail(q.bits == 0 ? "weight_packed's " + std::to_string(words) + " words a row fit no 2, 4 or 8 bits "
                                     "for weight_shape " + shape_text(*logical)
                               : "bits " + std::to_string(q.bits) + " is not decoded (pack-quantized: 2, 4 or 8)");
        return {};
    }
    const std::uint64_t per_word = 32 / q.bits;
    if (packed.shape != Shape{out, ceil_div(in, per_word)}) {
        check.fail("weight_shape " + shape_text(*logical) + " does not fit weight_packed's shape " +
                   shape_text(packed.shape) + " at " + std::to_string(q.bits) + " bits");
        return {};
    }
    // Scales: one for the tensor, or [out, groups].
    std::uint64_t groups = 1;
    if (scale->elements != 1) {
        if (!check.rank_is(*scale, "weight_scale", 2)) return {};
        groups = scale->shape[1];
        if (!check.shape_is(scale, "weight_scale", {out, groups})) return {};
        if (groups == 0 && in > 0) {
            check.fail("weight_scale has no group");
            return {};
        }
    }
    q.group_size = groups <= 1 ? std::max<std::uint64_t>(in, 1)
                               : (declared != nullptr && declared->group_size > 0 ? declared->group_size
                                                                                   : ceil_div(in, groups));
    if (g_idx == nullptr && groups > 1 && ceil_div(in, q.group_size) != groups) {
        check.fail("group_size " + std::to_string(q.group_size) + " over " + std::to_string(in) +
                   " columns makes " + std::to_string(ceil_div(in, q.group_size)) + " groups, but weight_scale has " +
                   std::to_string(groups));
        return {};
    }
    if (g_idx != nullptr && !check.shape_is(g_idx, "weight_g_idx", {in})) return {};
    if (zero_point != nullptr) {
        // Packed along dim 0 (compressed-tensors 0.10 on), or one signed int8 a row and group (before).
        const bool packed_zeros = stores(*zero_point->type, "I32");
        check.dtype_is(zero_point, "weight_zero_point", packed_zeros || stores(*zero_point->type, "I8"),
                       "I32 (packed) or I8");
        if (check.failed()) return {};
        const Shape zeros_shape{packed_zeros ? ceil_div(out, per_word) : out, groups};
        if (!check.shape_is(zero_point, "weight_zero_point", zeros_shape)) return {};
    }
    return {out, in};
}

// Tensors of a model found by their names.
class Finder {
public:
    Finder(const Catalog& catalog, const DeclaredQuantization* declared) : catalog_(catalog), declared_(declared) {
        names_.reserve(catalog.tensors.size());
        for (std::uint32_t i = 0; i < catalog.tensors.size(); ++i) names_.emplace(catalog.tensors[i].name, i);
    }

    std::optional<std::uint32_t> find(const std::string& name) const {
        const auto found = names_.find(name);
        return found == names_.end() ? std::nullopt : std::optional(found->second);
    }

    // The weight whose main part is tensor `index`, if it is one.
    std::optional<Candidate> candidate(std::uint32_t index) const {
        const Tensor& tensor = catalog_.tensors[index];
        const std::string& name = tensor.name;
        if (ends_with(name, "qweight")) {
            return integer_candidate(index, name.substr(0, name.size() - std::string_view("qweight").size()));
        }
        if (ends_with(name, "weight_packed")) {
            const std::string base = name.substr(0, name.size() - std::string_view("weight_packed").size());
            return with_parts({index, QuantScheme::PackQuantized, base + "weight", "weight_packed", {}}, base,
                              {"weight_scale", "weight_zero_point", "weight_shape", "weight_g_idx"});
        }
        if (ends_with(name, "_blocks")) {
            const std::string logical = name.substr(0, name.size() - std::string_view("_blocks").size());
            if (!find(logical + "_scales")) return std::nullopt;
            return with_parts({index, QuantScheme::Mxfp4, logical, "blocks", {}}, logical + "_", {"scales"});
        }
        if (ends_with(name, "weight")) return scaled_candidate(index, tensor);
        return std::nullopt;
    }

private:
    // Each part is named `base` + its role ("model.q_proj." + "qzeros").
    Candidate with_parts(Candidate candidate, const std::string& base, std::initializer_list<const char*> roles) const {
        for (const char* role : roles) {
            if (const auto part = find(base + role)) candidate.parts.emplace_back(role, *part);
        }
        return candidate;
    }

    // X.qweight: GPTQ or AWQ, as the config says, else as the shapes say (GPTQ's qweight has a column per output,
    // AWQ's one per eight).
    std::optional<Candidate> integer_candidate(std::uint32_t index, const std::string& base) const {
        QuantScheme scheme = QuantScheme::Gptq;
        if (declared_ != nullptr && declared_->scheme == QuantScheme::Awq) {
            scheme = QuantScheme::Awq;
        } else if (declared_ == nullptr || declared_->scheme != QuantScheme::Gptq) {
            const auto scales = find(base + "scales");
            const Shape& qweight = catalog_.tensors[index].shape;
            if (scales && qweight.size() == 2 && catalog_.tensors[*scales].shape.size() == 2 &&
                catalog_.tensors[*scales].shape[1] != qweight[1]) {
                scheme = QuantScheme::Awq;
            }
        }
        return with_parts({index, scheme, base + "weight", "qweight", {}}, base, {"qzeros", "scales", "g_idx"});
    }

    // X.weight beside X.weight_scale_inv (fp8-block), X.weight_scale (fp8; nvfp4 beside X.weight_scale_2 too), or
    // beside none where the config says such weights are FP8 or NVFP4 (their scale is missing then).
    std::optional<Candidate> scaled_candidate(std::uint32_t index, const Tensor& tensor) const {
        const std::string& name = tensor.name;
        const std::string base = name.substr(0, name.size() - std::string_view("weight").size());
        const bool fp8 = stores(*tensor.type, "F8_E4M3");
        const bool bytes = stores(*tensor.type, "U8");
        if (find(name + "_scale_inv")) {
            return with_parts({index, QuantScheme::Fp8Block, name, "weight", {}}, base,
                              {"weight_scale_inv", "input_scale"});
        }
        if (find(name + "_scale")) {
            if (find(name + "_scale_2") || (bytes && declares(QuantScheme::Nvfp4))) {
                return with_parts({index, QuantScheme::Nvfp4, name, "weight", {}}, base,
                                  {"weight_scale", "weight_scale_2", "input_scale"});
            }
            if (!fp8 && !declares(QuantScheme::Fp8)) return std::nullopt;   // another method's scale
            return with_parts({index, QuantScheme::Fp8, name, "weight", {}}, base, {"weight_scale", "input_scale"});
        }
        if (fp8 && (declares(QuantScheme::Fp8Block) || declares(QuantScheme::Fp8))) {
            return Candidate{index, *declared_->scheme, name, "weight", {}};
        }
        if (bytes && declares(QuantScheme::Nvfp4)) return Candidate{index, QuantScheme::Nvfp4, name, "weight", {}};
        return std::nullopt;
    }

    bool declares(QuantScheme scheme) const {
        return declared_ != nullptr && declared_->scheme == scheme && declared_->unsupported.empty();
    }

    const Catalog& catalog_;
    const DeclaredQuantization* declared_;
    Index names_;
};

bool same_family(QuantScheme a, QuantScheme b) {
    const auto family = [](QuantScheme s) { return s == QuantScheme::Fp8Block ? QuantScheme::Fp8 : s; };
    return family(a) == family(b);
}

// The quantization of one candidate, its parts checked; the logical shape, empty when a part does not fit.
std::pair<std::shared_ptr<Quantization>, Shape> built(const Catalog& catalog, const Candidate& candidate,
                                                      const DeclaredQuantization* declared) {
    auto q = std::make_shared<Quantization>();
    q->scheme = candidate.scheme;
    q->parts.push_back(QuantizedPart{candidate.main_role, catalog.tensors[candidate.main]});
    for (const auto& [role, index] : candidate.parts) q->parts.push_back(QuantizedPart{role, catalog.tensors[index]});
    WeightCheck check(catalog, candidate, *q);
    if (declared != nullptr && declared->scheme && same_family(*declared->scheme, candidate.scheme) &&
        !declared->unsupported.empty()) {
        check.fail("the config's " + declared->unsupported + " is not decoded");
    }
    Shape shape;
    if (!check.failed()) {
        switch (candidate.scheme) {
            case QuantScheme::Fp8Block:
            case QuantScheme::Fp8: shape = check_fp8(check, *q, declared); break;
            case QuantScheme::Nvfp4: shape = check_nvfp4(check, *q); break;
            case QuantScheme::Mxfp4: shape = check_mxfp4(check, *q); break;
            case QuantScheme::Gptq: shape = check_gptq(check, *q, declared); break;
            case QuantScheme::Awq: shape = check_awq(check, *q, declared); break;
            case QuantScheme::PackQuantized: shape = check_pack_quantized(catalog, check, *q, declared); break;
        }
    }
    if (check.failed()) shape.clear();
    return {std::move(q), std::move(shape)};
}

std::uint64_t product(const Shape& shape) {
    std::uint64_t elements = 1;
    for (const std::uint64_t size : shape) elements *= size;
    return elements;
}

}  // namespace

std::string_view scheme_name(QuantScheme scheme) { return kSchemeNames[static_cast<std::size_t>(scheme)]; }

void find_quantized_weights(Catalog& catalog, const DeclaredQuantization* declared) {
    std::vector<Candidate> candidates;
    {
        const Finder finder(catalog, declared);
        for (std::uint32_t i = 0; i < catalog.tensors.size(); ++i) {
            if (auto candidate = finder.candidate(i)) candidates.push_back(std::move(*candidate));
        }
    }
    // Checked in parallel: a pack-quantized weight reads its weight_shape, which for a remote model is a request.
    std::vector<std::pair<std::shared_ptr<Quantization>, Shape>> weights(candidates.size());
    constexpr unsigned kReadsAtOnce = 8;
    in_parallel(candidates.size(), kReadsAtOnce,
                [&](std::size_t i) { weights[i] = built(catalog, candidates[i], declared); });

    std::unordered_map<std::string_view, std::uint32_t> names;
    for (std::uint32_t i = 0; i < catalog.tensors.size(); ++i) names.emplace(catalog.tensors[i].name, i);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        auto& [quantization, shape] = weights[i];
        const Candidate& candidate = candidates[i];
        const auto twin = names.find(candidate.logical_name);
        if (twin != names.end() && twin->second != candidate.main) {
            quantization->problem = "its logical name " + candidate.logical_name + " is also a tensor of its own";
            shape.clear();
        }
        for (const auto& part : candidate.parts) catalog.tensors[part.second].quantization_part = true;
        Tensor& tensor = catalog.tensors[candidate.main];
        tensor.name = candidate.logical_name;
        if (quantization->problem.empty()) {
            tensor.shape = shape;
            tensor.elements = product(shape);
            tensor.raw_in_c_order = false;
        }
        tensor.quantization = std::move(quantization);
    }
    if (declared != nullptr && declared->scheme && declared->unsupported.empty() &&
        std::none_of(candidates.begin(), candidates.end(),
                     [&](const Candidate& c) { return same_family(c.scheme, *declared->scheme); })) {
        catalog.quantization_problems.push_back("the config's quantization_config declares " +
                                                std::string(scheme_name(*declared->scheme)) + " (quant_method " +
                                                declared->method + "), but no tensor has that scheme's parts");
    }
}

bool may_hold_quantized_weights(const Catalog& catalog) {
    constexpr std::array<std::string_view, 6> kPartEndings{"qweight", "weight_packed", "_blocks", "weight_scale",
                                                           "weight_scale_inv", "weight_scale_2"};
    return std::any_of(catalog.tensors.begin(), catalog.tensors.end(), [&](const Tensor& tensor) {
        return stores(*tensor.type, "F8_E4M3") ||
               std::any_of(kPartEndings.begin(), kPartEndings.end(),
                           [&](std::string_view ending) { return ends_with(tensor.name, ending); });
    });
}


std::string_view quantized_dtype(const Quantization& quantization) {
    const unsigned bits = quantization.bits;
    switch (quantization.scheme) {
        case QuantScheme::Fp8Block: return "FP8-BLOCK";
        case QuantScheme::Fp8: return "FP8";
        case QuantScheme::Mxfp4: return "MXFP4";
        case QuantScheme::Nvfp4: return "NVFP4";
        case QuantScheme::Gptq:
            return bits == 2 ? "GPTQ-INT2" : bits == 4 ? "GPTQ-INT4" : bits == 8 ? "GPTQ-INT8" : "GPTQ";
        case QuantScheme::Awq: return bits == 4 ? "AWQ-INT4" : "AWQ";
        case QuantScheme::PackQuantized:
            return bits == 2   ? "PACK-QUANTIZED-INT2"
                   : bits == 4 ? "PACK-QUANTIZED-INT4"
                   : bits == 8 ? "PACK-QUANTIZED-INT8"
                               : "PACK-QUANTIZED";
    }
    return "QUANTIZED";
}


std::string why_no_values(const Tensor& tensor) {
    if (tensor.quantization && !tensor.quantization->problem.empty()) {
        return "its " + std::string(scheme_name(tensor.quantization->scheme)) +
               " parts do not fit: " + tensor.quantization->problem;
    }
    return "dtype " + std::string(tensor.type->name) + " has no float32 conversion";
}

}  // namespace tensorfs
