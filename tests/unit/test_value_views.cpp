// dequant.bf16 and dequant.f16 through Content, without a mount: sizes, every byte equal to ggml's float32 output
// rounded by the portable conversions, at odd offsets across chunk borders under a cache that evicts all the time;
// a tensor stored in a view's own encoding serves its raw bytes (no decode), unless its raw bytes are not in C
// order; and each view counts its own reads.
#include <cstring>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "tensorfs/content.hpp"
#include "tensorfs/f32_to_16.hpp"
#include "tensorfs/open_source.hpp"
#include "vectors.hpp"

using namespace tensorfs;

namespace {

struct Opened {
    Opened(const std::string& relative, std::uint64_t budget, bool raw_in_c_order = true)
        : catalog(open_catalog(test::vectors_path(relative))), tree(catalog), files(catalog) {
        for (Tensor& tensor : catalog.tensors) tensor.raw_in_c_order = raw_in_c_order;
        content = std::make_unique<Content>(catalog, tree, files, stats, budget);
    }

    std::string read(Node node, std::uint64_t offset, std::size_t length) {
        std::string out(length, '\0');
        out.resize(content->read(node, offset, length, out.data()));
        return out;
    }
    std::string whole(Node node) { return read(node, 0, content->size(node)); }

    Catalog catalog;
    Tree tree;
    SourceFiles files;
    Stats stats;
    std::unique_ptr<Content> content;
};

std::string rounded(const std::string& f32, ValueView view) {
    std::vector<float> values(f32.size() / 4);
    if (!values.empty()) std::memcpy(values.data(), f32.data(), f32.size());
    std::string out(values.size() * 2, '\0');
    for (std::size_t i = 0; i < values.size(); ++i) {
        const std::uint16_t h = view == ValueView::BF16 ? bf16_from_f32(values[i]) : f16_from_f32(values[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
    }
    return out;
}

std::string file_text(const std::string& path) {
    const auto bytes = test::read_bytes(path);
    return std::string(bytes.begin(), bytes.end());
}

// ggml's float32 output for a tensor of the GGUF vectors.
std::string expected_f32(const std::string& source, const std::string& name) {
    for (const auto& file : test::manifest()["gguf"]) {
        if (file["file"] != source) continue;
        for (const auto& tensor : file["tensors"]) {
            if (tensor["name"] == name) return file_text(test::vectors_path(tensor["expected_f32"]));
        }
    }
    throw std::runtime_error("no vector for " + name);
}

constexpr NodeKind kViewKinds[] = {NodeKind::DequantBf16, NodeKind::DequantF16};
ValueView view_of(NodeKind kind) { return kind == NodeKind::DequantBf16 ? ValueView::BF16 : ValueView::F16; }

}  // namespace

BOOST_AUTO_TEST_SUITE(value_views)

BOOST_AUTO_TEST_CASE(every_ggml_type_rounded_from_ggml_output_at_chunk_borders) {
    // 64 KiB: 4 KiB chunks, 2048 values of a 16-bit view each.
    for (const std::string source : {"gguf/mixed.gguf", "gguf/tiny-llama-Q4_K_M.gguf"}) {
        Opened opened(source, 64 << 10);
        for (std::uint32_t i = 0; i < opened.catalog.tensors.size(); ++i) {
            const Tensor& tensor = opened.catalog.tensors[i];
            const std::string f32 = expected_f32(source, tensor.name);
            for (const NodeKind kind : kViewKinds) {
                BOOST_TEST_CONTEXT(source << " " << tensor.name << " " << dtype_name(view_of(kind))) {
                    const Node node{kind, i};
                    BOOST_TEST(opened.content->size(node) == tensor.elements * 2);
                    const bool raw = opened.content->source_slice(node, 0, 0).has_value();
                    const std::string expected =
                        raw ? file_text(test::vectors_path(source)).substr(tensor.offset, tensor.nbytes)
                            : rounded(f32, view_of(kind));
                    BOOST_TEST(opened.whole(node) == expected);
                    const std::size_t chunk = opened.content->chunk_bytes();
                    for (const std::uint64_t border : {chunk, 2 * chunk, 5 * chunk}) {
                        for (const std::uint64_t start : {border - 3, border - 1, border, border + 1}) {
                            if (start >= expected.size()) continue;
                            BOOST_TEST(opened.read(node, start, chunk + 5) == expected.substr(start, chunk + 5));
                        }
                    }
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_tensor_in_a_views_encoding_serves_its_raw_bytes) {
    Opened opened("safetensors/all_dtypes.safetensors", 1 << 20);
    const std::string source = file_text(test::vectors_path("safetensors/all_dtypes.safetensors"));
    for (std::uint32_t i = 0; i < opened.catalog.tensors.size(); ++i) {
        const Tensor& tensor = opened.catalog.tensors[i];
        const std::string raw = source.substr(tensor.offset, tensor.nbytes);
        const std::string name(tensor.type->name);
        for (const auto& [kind, encoding] : {std::pair{NodeKind::DequantBf16, "BF16"},
                                             std::pair{NodeKind::DequantF16, "F16"},
                                             std::pair{NodeKind::DequantF32, "F32"}}) {
            const Node node{kind, i};
            BOOST_TEST_CONTEXT(tensor.name << " " << encoding) {
                const bool own = name == encoding;
                BOOST_TEST(opened.content->source_slice(node, 0, 1).has_value() == own);
                if (own) BOOST_TEST(opened.whole(node) == raw);
            }
        }
    }
    // Served from the file: nothing decoded.
    BOOST_TEST(opened.stats.bytes_decoded.get() == 0u);
    BOOST_TEST(opened.stats.dequant_bf16.reads.get() > 0u);
    BOOST_TEST(opened.stats.dequant_f16.reads.get() > 0u);
}

BOOST_AUTO_TEST_CASE(raw_bytes_not_in_c_order_are_never_served_as_a_view) {
    // The flag a strided storage sets: the views decode, and round the float32 values (every BF16 NaN is 0x7FC0).
    Opened opened("gguf/mixed.gguf", 1 << 20, false);
    for (std::uint32_t i = 0; i < opened.catalog.tensors.size(); ++i) {
        const Tensor& tensor = opened.catalog.tensors[i];
        if (tensor.name != "allbits.bf16" && tensor.name != "allbits.f16") continue;
        const std::string f32 = expected_f32("gguf/mixed.gguf", tensor.name);
        for (const NodeKind kind : kViewKinds) {
            BOOST_TEST_CONTEXT(tensor.name) {
                BOOST_TEST(!opened.content->source_slice(Node{kind, i}, 0, 1).has_value());
                BOOST_TEST(opened.whole(Node{kind, i}) == rounded(f32, view_of(kind)));
            }
        }
    }
    BOOST_TEST(opened.stats.bytes_decoded.get() > 0u);
}

BOOST_AUTO_TEST_CASE(each_view_counts_its_reads_and_bytes) {
    Opened opened("gguf/tiny-llama-Q4_K_M.gguf", 1 << 20);
    const Node bf16{NodeKind::DequantBf16, 0}, f16{NodeKind::DequantF16, 0};
    opened.read(bf16, 0, 1000);
    opened.read(bf16, 1000, 24);
    opened.read(f16, 0, 10);
    BOOST_TEST(opened.stats.dequant_bf16.reads.get() == 2u);
    BOOST_TEST(opened.stats.dequant_bf16.bytes.get() == 1024u);
    BOOST_TEST(opened.stats.dequant_f16.reads.get() == 1u);
    BOOST_TEST(opened.stats.dequant_f16.bytes.get() == 10u);
    BOOST_TEST(opened.stats.dequant_f32.reads.get() == 0u);
    const std::string json = opened.stats.render_json();
    BOOST_TEST(json.find("\"dequant.bf16\"") != std::string::npos);
    BOOST_TEST(json.find("\"model.safetensors\"") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
