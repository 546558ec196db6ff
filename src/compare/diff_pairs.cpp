#include "diff_pairs.hpp"

#include <fnmatch.h>

#include <stdexcept>
#include <unordered_map>

#include "diff_gguf_names.hpp"

namespace tensorfs::compare {
namespace {

std::uint64_t metadata_count(const Catalog& catalog, const std::string& key) {
    const auto found = catalog.metadata.find(key);
    if (found == catalog.metadata.end() || !found->is_number_unsigned()) return 0;
    return found->get<std::uint64_t>();
}

GgufModel gguf_model(const Catalog& gguf) {
    GgufModel model;
    const auto architecture = gguf.metadata.find("general.architecture");
    if (architecture != gguf.metadata.end() && architecture->is_string()) {
        model.architecture = architecture->get<std::string>();
    }
    model.head_count = metadata_count(gguf, model.architecture + ".attention.head_count");
    model.head_count_kv = metadata_count(gguf, model.architecture + ".attention.head_count_kv");
    if (model.head_count_kv == 0) model.head_count_kv = model.head_count;
    return model;
}

bool matches(const std::string& glob, const std::string& name) {
    return glob.empty() || ::fnmatch(glob.c_str(), name.c_str(), 0) == 0;
}

std::unordered_map<std::string, std::uint32_t> index_by_name(const Catalog& catalog) {
    std::unordered_map<std::string, std::uint32_t> by_name;
    for (std::uint32_t i = 0; i < catalog.tensors.size(); ++i) by_name.emplace(catalog.tensors[i].name, i);
    return by_name;
}

// The partner in the other catalog's `by_name` of tensor `name` of this side, with how its values were changed.
struct Partner {
    std::string name;
    std::uint64_t permuted_heads = 0;
    float added = 0;
};

}  // namespace

Pairing pair_tensors(const Catalog& a, const Catalog& b, NameMode mode, const std::string& glob) {
    const bool a_gguf = a.format == "gguf", b_gguf = b.format == "gguf";
    Pairing pairing;
    pairing.mode = mode == NameMode::Auto ? (a_gguf != b_gguf ? NameMode::Gguf : NameMode::Same) : mode;
    const bool by_gguf_names = pairing.mode == NameMode::Gguf;
    if (by_gguf_names && a_gguf == b_gguf) {
        throw std::runtime_error("--names gguf pairs a GGUF with a checkpoint that is not one: A and B are both " +
                                 std::string(a_gguf ? "GGUF" : "not GGUF"));
    }
    GgufModel model;
    if (by_gguf_names) {
        model = gguf_model(a_gguf ? a : b);
        if (!has_gguf_name_map(model.architecture)) {
            throw std::runtime_error("no GGUF name map for architecture '" + model.architecture +
                                     "' (llama, qwen2, qwen3, gemma, gemma2, phi3 have one); try --names same");
        }
        if (model.architecture == "llama" && model.head_count == 0) {
            throw std::runtime_error("the GGUF has no llama.attention.head_count: its q and k rows cannot be put "
                                     "back in Hugging Face order");
        }
    }
    const Catalog& hf = a_gguf && by_gguf_names ? b : a;
    const Catalog& other = a_gguf && by_gguf_names ? a : b;
    const auto other_by_name = index_by_name(other);
    std::vector<bool> other_paired(other.tensors.size(), false);
    std::vector<TensorPair> by_hf(hf.tensors.size());

    for (std::uint32_t i = 0; i < hf.tensors.size(); ++i) {
        Partner partner{hf.tensors[i].name};
        if (by_gguf_names) {
            if (const auto counterpart = gguf_counterpart(partner.name, model)) {
                partner = Partner{counterpart->name, counterpart->permuted_heads, counterpart->added};
            }
        }
        TensorPair& pair = by_hf[i];
        pair.gguf_is_a = by_gguf_names && a_gguf;
        const auto found = other_by_name.find(partner.name);
        if (found != other_by_name.end() && !other_paired[found->second]) {
            other_paired[found->second] = true;
            (pair.gguf_is_a ? pair.a : pair.b) = found->second;
            pair.permuted_heads = partner.permuted_heads;
            pair.added = partner.added;
        }
        (pair.gguf_is_a ? pair.b : pair.a) = i;
    }

    // A's tensors in A's order, paired or not, then B's tensors that have no partner, in B's order.
    std::vector<TensorPair> by_a(a.tensors.size()), only_b;
    for (const TensorPair& pair : by_hf) {
        if (pair.a) {
            by_a[*pair.a] = pair;
        } else {
            only_b.push_back(pair);
        }
    }
    for (std::uint32_t j = 0; j < other.tensors.size(); ++j) {
        if (other_paired[j]) continue;
        TensorPair pair;
        pair.gguf_is_a = by_gguf_names && a_gguf;
        if (&other == &a) {
            pair.a = j;
            by_a[j] = pair;
        } else {
            pair.b = j;
            only_b.push_back(pair);
        }
    }
    // A part of a quantized weight (its scales, zero points...) that the other side lacks is no difference: its
    // values are in its weight's, which is paired by its logical name.
    const auto lone_part = [&](const TensorPair& pair) {
        return (pair.a && !pair.b && a.tensors[*pair.a].quantization_part) ||
               (pair.b && !pair.a && b.tensors[*pair.b].quantization_part);
    };
    const auto keep = [&](const TensorPair& pair) {
        if (lone_part(pair)) return false;
        return (pair.a && matches(glob, a.tensors[*pair.a].name)) || (pair.b && matches(glob, b.tensors[*pair.b].name));
    };
    for (const auto* list : {&by_a, &only_b}) {
        for (const TensorPair& pair : *list) {
            if (keep(pair)) pairing.pairs.push_back(pair);
        }
    }
    return pairing;
}

}  // namespace tensorfs::compare
