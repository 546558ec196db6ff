#include "tensorfs/json_files.hpp"

#include <algorithm>

namespace tensorfs {

namespace {

// meta.json's "quantization": the scheme, its parameters, every part by role (its stored name), the main part's
// stored shape; and why the values cannot be made, when they cannot.
nlohmann::ordered_json quantization_meta(const Quantization& quantization) {
    nlohmann::ordered_json meta;
    meta["scheme"] = scheme_name(quantization.scheme);
    meta["bits"] = quantization.bits;
    meta["group_size"] = quantization.group_size == 0 ? nlohmann::ordered_json(nullptr)
                                                      : nlohmann::ordered_json(quantization.group_size);
    if (quantization.block_rows > 0 && quantization.scheme == QuantScheme::Fp8Block) {
        meta["block"] = {quantization.block_rows, quantization.block_columns};
    }
    if (quantization.scheme == QuantScheme::Gptq) {
        meta["checkpoint_format"] = quantization.zeros_less_one ? "gptq" : "gptq_v2";
    }
    auto& parts = meta["parts"] = nlohmann::ordered_json::object();
    for (const auto& part : quantization.parts) parts[part.role] = part.stored.name;
    meta["stored_shape"] = quantization.parts.front().stored.shape;
    if (!quantization.problem.empty()) meta["error"] = quantization.problem;
    return meta;
}

}  // namespace

nlohmann::ordered_json tensor_meta(const Catalog& catalog, std::uint32_t index) {
    const Tensor& tensor = catalog.tensors[index];
    nlohmann::ordered_json meta;
    meta["name"] = tensor.name;
    meta["dtype"] = tensor.type->name;
    if (tensor.type->ggml_id >= 0) meta["ggml_type"] = tensor.type->ggml_id;
    meta["shape"] = tensor.shape;
    meta["elements"] = tensor.elements;
    meta["nbytes"] = tensor.nbytes;
    meta["file"] = catalog.files[tensor.file].display;
    meta["offset"] = tensor.offset;
    if (tensor.strided()) {
        meta["stride"] = tensor.stride;
        meta["storage_offset"] = tensor.storage_offset;
    }
    if (tensor.quantization) meta["quantization"] = quantization_meta(*tensor.quantization);
    if (tensor.has_values()) {
        meta["dequant"] = {{"dtype", "float32"}, {"shape", tensor.shape}, {"nbytes", tensor.f32_bytes()}};
    } else {
        meta["dequant"] = nullptr;
    }
    return meta;
}

namespace {

// A folder of several models: no format of its own, the candidates, and how to mount one of them.
void add_models(nlohmann::ordered_json& model, const std::vector<ModelCandidate>& models) {
    model["format"] = nullptr;
    auto& listed = model["models"] = nlohmann::ordered_json::array();
    for (const auto& candidate : models) {
        listed.push_back({{"path", candidate.path}, {"format", candidate.format}, {"files", candidate.files}});
    }
    model["pick"] = "this folder holds several models, so no tensors and no model.safetensors are shown: mount one "
                    "of them by naming its file as SOURCE (SOURCE/PATH), or with -o model=PATH (PATH relative to "
                    "the folder)";
}

// The side files and files of source/ that could not be opened at mount, with the reason.
void add_problems(nlohmann::ordered_json& model, const ModelFolder& folder) {
    const auto unopened = unopened_files(folder);
    if (unopened.empty()) return;
    auto& problems = model["problems"] = nlohmann::ordered_json::array();
    for (const FolderFile* file : unopened) problems.push_back({{"path", file->path}, {"what", file->problem}});
}

nlohmann::ordered_json listed(const std::vector<FolderFile>& files, const std::string& prefix) {
    auto entries = nlohmann::ordered_json::array();
    for (const auto& file : files) entries.push_back({{"path", prefix + file.path}, {"size", file.object->size()}});
    return entries;
}

}  // namespace

nlohmann::ordered_json quantization_summary(const Catalog& catalog) {
    nlohmann::ordered_json schemes = nlohmann::ordered_json::array();
    nlohmann::ordered_json problems = nlohmann::ordered_json::array();
    for (const Tensor& tensor : catalog.tensors) {
        if (!tensor.quantization) continue;
        const Quantization& q = *tensor.quantization;
        if (!q.problem.empty()) {
            problems.push_back(tensor.name + ": " + why_no_values(tensor));
            continue;
        }
        nlohmann::ordered_json kind;
        kind["scheme"] = scheme_name(q.scheme);
        kind["dtype"] = quantized_dtype(q);
        kind["bits"] = q.bits;
        kind["group_size"] = q.group_size == 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(q.group_size);
        if (q.scheme == QuantScheme::Fp8Block) kind["block"] = {q.block_rows, q.block_columns};
        const auto same = std::find_if(schemes.begin(), schemes.end(), [&](const nlohmann::ordered_json& known) {
            nlohmann::ordered_json without_count = known;
            without_count.erase("weights");
            return without_count == kind;
        });
        if (same != schemes.end()) {
            (*same)["weights"] = (*same)["weights"].get<std::uint64_t>() + 1;
        } else {
            kind["weights"] = 1;
            schemes.push_back(std::move(kind));
        }
    }
    for (const std::string& problem : catalog.quantization_problems) problems.push_back(problem);
    if (schemes.empty() && problems.empty()) return nullptr;
    return {{"schemes", std::move(schemes)}, {"problems", std::move(problems)}};
}

nlohmann::ordered_json model_meta(const Catalog& catalog, const Tree& tree, const ModelExport* model_export) {
    nlohmann::ordered_json model;
    model["format"] = catalog.format;
    auto& files = model["files"] = nlohmann::ordered_json::array();
    for (const auto& file : catalog.files) files.push_back({{"path", file.display}, {"size", file.size}});
    model["tensor_count"] = catalog.tensors.size();
    std::uint64_t total = 0;
    for (const auto& tensor : catalog.tensors) total += tensor.nbytes;
    model["total_nbytes"] = total;
    model["metadata"] = catalog.metadata;
    if (catalog.format == "gguf") model["metadata_types"] = catalog.metadata_types;
    auto& renamed = model["renamed"] = nlohmann::ordered_json::object();
    for (std::uint32_t i = 0; i < catalog.tensors.size(); ++i) {
        const std::string_view directory = tree.directory_name(i);
        if (directory != catalog.tensors[i].name) renamed[catalog.tensors[i].name] = std::string(directory);
    }
    if (auto quantization = quantization_summary(catalog); !quantization.is_null()) {
        model["quantization"] = std::move(quantization);
    }
    if (model_export != nullptr) model["export"] = model_export->summary(catalog);
    if (tree.folder() != nullptr && !tree.folder()->models.empty()) add_models(model, tree.folder()->models);
    if (tree.folder() != nullptr) add_problems(model, *tree.folder());
    return model;
}

nlohmann::ordered_json folder_files_json(const ModelFolder& folder) {
    nlohmann::ordered_json document;
    document["side_files"] = listed(folder.side_files, "");
    document["source"] = listed(folder.source_files, "source/");
    if (!folder.models.empty()) {
        auto& models = document["models"] = nlohmann::ordered_json::array();
        for (const auto& model : folder.models) models.push_back({{"path", model.path}, {"format", model.format}});
    }
    add_problems(document, folder);
    return document;
}

std::string render_json_file(const nlohmann::ordered_json& document) {
    return document.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace tensorfs
