// model.safetensors without a mount (ModelExport and Content): the header as safetensors' writer makes it, every
// rule of `tensorfs validate` holding for the file (written out and opened by the same parser), each tensor's bytes
// equal to its raw file or the converted view, the dtypes of each export_dtype, tensors left out, the 100 MB header
// limit, names that are not UTF-8, strided tensors served from their values, and a 100,000-tensor header.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "tensorfs/content.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/json_files.hpp"
#include "tensorfs/model_export.hpp"
#include "tensorfs/open_source.hpp"
#include "temp_folder.hpp"
#include "test_gguf_builder.hpp"
#include "vectors.hpp"

using namespace tensorfs;
using Json = nlohmann::ordered_json;

namespace {

struct Exported {
    Exported(Catalog opened, ExportDtype dtype)
        : catalog(std::move(opened)), model_export(catalog, dtype), tree(catalog, model_export.available()),
          files(catalog), content(catalog, tree, files, stats, 64 << 10, &model_export) {}

    std::string read(Node node, std::uint64_t offset, std::size_t length) {
        std::string out(length, '\0');
        out.resize(content.read(node, offset, length, out.data()));
        return out;
    }
    std::string whole(Node node) { return read(node, 0, content.size(node)); }
    std::string file() { return whole(Node{NodeKind::ModelSafetensors}); }

    Catalog catalog;
    ModelExport model_export;
    Tree tree;
    SourceFiles files;
    Stats stats;
    Content content;
};

std::uint64_t header_length(const std::string& file) {
    std::uint64_t length = 0;
    for (int i = 0; i < 8; ++i) length |= std::uint64_t{static_cast<unsigned char>(file[i])} << (8 * i);
    return length;
}

// The header's JSON, keys in the file's order.
Json header_json(const std::string& file) { return Json::parse(file.substr(8, header_length(file))); }

NodeKind kind_of(const ModelExport::Part& part) {
    if (!part.view) return NodeKind::Raw;
    switch (*part.view) {
        case ValueView::BF16: return NodeKind::DequantBf16;
        case ValueView::F16: return NodeKind::DequantF16;
        default: return NodeKind::DequantF32;
    }
}

// The checks every exported file passes: layout, validity (by the parser `tensorfs validate` runs), contents.
void check_export(Exported& exported, const std::string& what) {
    BOOST_TEST_CONTEXT(what) {
        BOOST_REQUIRE(exported.model_export.available());
        const std::string file = exported.file();
        BOOST_TEST(file.size() == exported.content.size(Node{NodeKind::ModelSafetensors}));
        const std::uint64_t length = header_length(file);
        BOOST_TEST(length % 8 == 0u);
        const std::string json_text = file.substr(8, length);
        const auto closing = json_text.find_last_not_of(' ');
        BOOST_TEST(json_text[closing] == '}');
        const Json header = header_json(file);
        auto entry = header.begin();
        BOOST_TEST(entry.key() == "__metadata__");
        BOOST_TEST(header["__metadata__"].contains("format"));
        for (const auto& [key, value] : header["__metadata__"].items()) BOOST_TEST(value.is_string(), key);

        // In the source's order, back to back from 0, each equal to its tensor's own file.
        std::uint64_t next = 0;
        for (const ModelExport::Part& part : exported.model_export.parts()) {
            ++entry;
            const Tensor& tensor = exported.catalog.tensors[part.tensor];
            BOOST_TEST_CONTEXT(tensor.name) {
                BOOST_REQUIRE(entry != header.end());
                BOOST_TEST(entry.key() == tensor.name);
                BOOST_TEST((*entry)["dtype"] == part.dtype);
                BOOST_TEST((*entry)["shape"] == Json(tensor.shape));
                BOOST_TEST((*entry)["data_offsets"] == Json::array({next, next + part.size}));
                BOOST_TEST(part.begin == 8 + length + next);
                next += part.size;
                BOOST_TEST(file.substr(part.begin, part.size) == exported.whole(Node{kind_of(part), part.tensor}));
            }
        }
        BOOST_TEST(8 + length + next == file.size());

        // Written out, the file is a valid safetensors source with the same tensors.
        const test::TempFolder folder;
        const auto path = folder.write("model.safetensors", file);
        const Catalog reopened = open_catalog(path.string());
        BOOST_REQUIRE(reopened.tensors.size() == exported.model_export.parts().size());
        for (std::size_t i = 0; i < reopened.tensors.size(); ++i) {
            const ModelExport::Part& part = exported.model_export.parts()[i];
            BOOST_TEST(reopened.tensors[i].name == exported.catalog.tensors[part.tensor].name);
            BOOST_TEST(reopened.tensors[i].type->name == part.dtype);
            BOOST_TEST(reopened.tensors[i].offset == part.begin);
        }
        BOOST_CHECK_NO_THROW(Tree{reopened});
    }
}

Catalog vectors(const std::string& relative) { return open_catalog(test::vectors_path(relative)); }

std::string dtype_of(const ModelExport& model_export, const Catalog& catalog, const std::string& name) {
    for (const auto& part : model_export.parts()) {
        if (catalog.tensors[part.tensor].name == name) return std::string(part.dtype);
    }
    return "(left out)";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(model_export)

BOOST_AUTO_TEST_CASE(every_vector_model_in_every_export_dtype) {
    for (const std::string source : {"gguf/mixed.gguf", "gguf/align64.gguf", "gguf/tiny-llama-Q4_K_M.gguf",
                                      "gguf/split/tiny-llama-Q4_K_M-00001-of-00003.gguf",
                                      "safetensors/all_dtypes.safetensors",
                                      "safetensors/sharded/model.safetensors.index.json"}) {
        for (const ExportDtype dtype : {ExportDtype::Keep, ExportDtype::BF16, ExportDtype::F16, ExportDtype::F32}) {
            Exported exported(vectors(source), dtype);
            check_export(exported, source + " " + std::string(name_of(dtype)));
        }
    }
}

BOOST_AUTO_TEST_CASE(dtypes_kept_and_converted) {
    const Catalog mixed = vectors("gguf/mixed.gguf");
    const ModelExport keep(mixed, ExportDtype::Keep);
    BOOST_TEST(dtype_of(keep, mixed, "blk.0.f16.weight") == "F16");
    BOOST_TEST(dtype_of(keep, mixed, "blk.0.bf16.weight") == "BF16");
    BOOST_TEST(dtype_of(keep, mixed, "blk.0.i64.weight") == "I64");
    BOOST_TEST(dtype_of(keep, mixed, "blk.0.f64.weight") == "F64");
    BOOST_TEST(dtype_of(keep, mixed, "blk.0.q4_k.weight") == "F32");
    BOOST_TEST(dtype_of(keep, mixed, "blk.0.iq2_xxs.weight") == "F32");
    const ModelExport bf16(mixed, ExportDtype::BF16);
    BOOST_TEST(dtype_of(bf16, mixed, "blk.0.f16.weight") == "BF16");
    BOOST_TEST(dtype_of(bf16, mixed, "blk.0.f64.weight") == "BF16");
    BOOST_TEST(dtype_of(bf16, mixed, "blk.0.q4_k.weight") == "BF16");
    BOOST_TEST(dtype_of(bf16, mixed, "blk.0.i8.weight") == "I8");   // integers keep theirs
    const Catalog all = vectors("safetensors/all_dtypes.safetensors");
    const ModelExport f16(all, ExportDtype::F16);
    BOOST_TEST(dtype_of(f16, all, "dtype.bool") == "BOOL");
    BOOST_TEST(dtype_of(f16, all, "dtype.u64") == "U64");
    BOOST_TEST(dtype_of(f16, all, "dtype.f8_e4m3") == "F16");
    BOOST_TEST(dtype_of(f16, all, "dtype.f32") == "F16");
    BOOST_TEST(dtype_of(f16, all, "scalar.f32") == "F16");
    const ModelExport keep_all(all, ExportDtype::Keep);
    BOOST_TEST(dtype_of(keep_all, all, "dtype.f8_e5m2") == "F8_E5M2");
    // A view in the tensor's own dtype is its raw bytes: nothing decoded for a BF16 model exported as BF16.
    Exported sharded(vectors("safetensors/sharded/model.safetensors.index.json"), ExportDtype::BF16);
    sharded.file();
    BOOST_TEST(sharded.stats.bytes_decoded.get() == 0u);
    BOOST_TEST(sharded.stats.model_safetensors.reads.get() == 1u);
}

BOOST_AUTO_TEST_CASE(metadata_as_strings_format_first) {
    const Catalog mixed = vectors("gguf/mixed.gguf");
    Exported exported(vectors("gguf/mixed.gguf"), ExportDtype::Keep);
    const Json metadata = header_json(exported.file())["__metadata__"];
    BOOST_TEST(metadata.begin().key() == "format");
    BOOST_TEST(metadata["format"] == "pt");
    BOOST_TEST(metadata.size() == mixed.metadata.size() + 1);
    for (const auto& [key, value] : mixed.metadata.items()) {
        BOOST_TEST_CONTEXT(key) {
            // Strings as they are, everything else as its JSON text.
            const std::string expected = value.is_string() ? value.get<std::string>()
                                                           : value.dump(-1, ' ', false, Json::error_handler_t::replace);
            BOOST_TEST(metadata[key] == expected);
        }
    }
    // A source's own "format" stays (with its meaning); its other metadata follow.
    Exported sharded(vectors("safetensors/sharded/model.safetensors.index.json"), ExportDtype::Keep);
    const Json sharded_metadata = header_json(sharded.file())["__metadata__"];
    BOOST_TEST(sharded_metadata["format"] == "pt");
    BOOST_TEST(sharded_metadata["total_size"] == sharded.catalog.metadata["total_size"].dump());
}

BOOST_AUTO_TEST_CASE(reads_decode_only_the_tensors_they_cover) {
    Exported exported(vectors("gguf/tiny-llama-Q4_K_M.gguf"), ExportDtype::Keep);
    const auto& parts = exported.model_export.parts();
    // The header alone, then one byte of each tensor: a Q4_K tensor decodes one chunk of its own, an F32 none.
    exported.read(Node{NodeKind::ModelSafetensors}, 0, exported.model_export.header().size());
    BOOST_TEST(exported.stats.bytes_decoded.get() == 0u);
    for (const ModelExport::Part& part : parts) {
        const std::uint64_t before = exported.stats.bytes_decoded.get();
        exported.read(Node{NodeKind::ModelSafetensors}, part.begin + part.size / 2, 1);
        const std::uint64_t decoded = exported.stats.bytes_decoded.get() - before;
        BOOST_TEST_CONTEXT(exported.catalog.tensors[part.tensor].name) {
            BOOST_TEST(decoded <= exported.content.chunk_bytes());
            BOOST_TEST((decoded == 0) == !part.view);
        }
    }
    BOOST_TEST(exported.model_export.part_at(0) == 0u);
    BOOST_TEST(exported.model_export.part_at(parts[1].begin - 1) == 0u);
    BOOST_TEST(exported.model_export.part_at(parts[1].begin) == 1u);
    BOOST_TEST(exported.model_export.part_at(exported.model_export.size()) == parts.size());
}

BOOST_AUTO_TEST_CASE(types_without_dtype_or_values_are_left_out_and_listed) {
    // A Q8_K tensor (ggml id 15: no to_float) between two F32 ones.
    std::vector<std::uint8_t> data(32 + 292 + 28 + 32, 0);
    const auto bytes = test::GgufBuilder()
                           .tensor("a", {8}, 0, 0)
                           .tensor("k", {256}, 15, 32)
                           .tensor("b", {8}, 0, 352)
                           .data(data)
                           .bytes();
    const test::TempFolder folder;
    const auto path = folder.write("q8k.gguf", std::string(bytes.begin(), bytes.end()));
    Exported exported(open_catalog(path.string()), ExportDtype::Keep);
    check_export(exported, "q8k.gguf");
    BOOST_TEST(exported.model_export.skipped() == std::vector<std::uint32_t>{1});
    const Json summary = exported.model_export.summary(exported.catalog);
    BOOST_TEST(summary["skipped"] == Json::array({"k"}));
    BOOST_TEST(summary["tensor_count"] == 2);
}

BOOST_AUTO_TEST_CASE(a_header_over_100_mb_gives_no_file_and_says_why) {
    Catalog catalog = vectors("gguf/align64.gguf");
    catalog.metadata["long"] = std::string(kMaxSafetensorsHeader, 'x');
    const ModelExport model_export(catalog, ExportDtype::Keep);
    BOOST_TEST(!model_export.available());
    BOOST_TEST(model_export.size() == 0u);
    BOOST_TEST(model_export.error().find("100000000") != std::string::npos);
    const Tree tree(catalog, model_export.available());
    BOOST_TEST(!tree.lookup(Node{NodeKind::Root}, "model.safetensors").has_value());
    const Json summary = model_export.summary(catalog);   // model.json's "export"
    BOOST_TEST(summary["error"] == model_export.error());
    BOOST_TEST(summary["dtype"] == "keep");
    BOOST_TEST(!summary.contains("size"));
    // Just under the limit: a file.
    catalog.metadata["long"] = std::string(kMaxSafetensorsHeader - 4096, 'x');
    BOOST_TEST(ModelExport(catalog, ExportDtype::Keep).available());
}

BOOST_AUTO_TEST_CASE(names_that_are_not_utf8_give_no_file) {
    Catalog catalog = vectors("gguf/align64.gguf");
    catalog.tensors[0].name = "bad\xff";
    const ModelExport model_export(catalog, ExportDtype::Keep);
    BOOST_TEST(!model_export.available());
    BOOST_TEST(model_export.error().find("UTF-8") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_root_shows_model_safetensors_and_names_stay_free) {
    const Catalog catalog = vectors("gguf/align64.gguf");
    const Tree with(catalog, true), without(catalog, false);
    const Node root{NodeKind::Root};
    BOOST_TEST(with.child_count(root) == without.child_count(root) + 1);
    BOOST_TEST(with.child(root, 1).name == "model.safetensors");
    const auto node = with.lookup(root, "model.safetensors");
    BOOST_REQUIRE(node.has_value());
    BOOST_TEST((with.node_of(Tree::inode_of(*node)) == node));
    BOOST_TEST(!without.node_of(Tree::inode_of(*node)).has_value());
}

BOOST_AUTO_TEST_CASE(strided_tensors_are_served_from_their_values) {
    // raw_in_c_order false (a strided PyTorch storage): BF16 and F16 keep their dtype from their own view, the
    // others come as F32 from dequant.f32.
    Catalog catalog = vectors("safetensors/all_dtypes.safetensors");
    for (Tensor& tensor : catalog.tensors) tensor.raw_in_c_order = false;
    Exported exported(std::move(catalog), ExportDtype::Keep);
    check_export(exported, "all_dtypes strided");
    for (const ModelExport::Part& part : exported.model_export.parts()) {
        const std::string stored(exported.catalog.tensors[part.tensor].type->name);
        BOOST_TEST_CONTEXT(exported.catalog.tensors[part.tensor].name) {
            BOOST_TEST(part.view.has_value());
            BOOST_TEST(part.dtype == (stored == "BF16" || stored == "F16" ? stored : std::string("F32")));
        }
    }
}

BOOST_AUTO_TEST_CASE(a_header_of_100000_tensors) {
    // Built in well under a second (measured by scripts/bench, not here): here, that it is complete and valid.
    Catalog catalog;
    catalog.format = "safetensors";
    catalog.files.push_back({"x.safetensors", "x.safetensors", 0, nullptr});
    for (int i = 0; i < 100'000; ++i) {
        Tensor tensor;
        tensor.name = "model.layers." + std::to_string(i / 1000) + ".mlp.experts." + std::to_string(i % 1000) +
                      ".down_proj.weight";
        tensor.type = safetensors_dtype_by_name("F32");
        tensor.shape = {2, 3};
        tensor.elements = 6;
        tensor.nbytes = 24;
        catalog.tensors.push_back(std::move(tensor));
    }
    const ModelExport model_export(catalog, ExportDtype::Keep);
    BOOST_REQUIRE(model_export.available());
    BOOST_TEST(model_export.parts().size() == 100'000u);
    const std::string& header = model_export.header();
    const nlohmann::json parsed = nlohmann::json::parse(header.substr(8));   // not ordered_json: quadratic here
    BOOST_TEST(parsed.size() == 100'001u);
    BOOST_TEST(model_export.size() == header.size() + 100'000u * 24);
}

BOOST_AUTO_TEST_SUITE_END()
