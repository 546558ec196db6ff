#include "tensorfs/model_figures.hpp"

#include <algorithm>

#include "tensorfs/json_files.hpp"
#include "tensorfs/model_export.hpp"

namespace tensorfs {
namespace {

// The figures as keys to add to model.json's content: parameter_count, bits_per_weight, dtypes.
nlohmann::ordered_json figures_json(const ModelFigures& figures) {
    nlohmann::ordered_json json;
    json["parameter_count"] = figures.parameters;
    json["bits_per_weight"] = figures.bits_per_weight ? nlohmann::ordered_json(*figures.bits_per_weight) : nullptr;
    auto& dtypes = json["dtypes"] = nlohmann::ordered_json::object();
    for (const DtypeFigures& d : figures.dtypes) {
        auto& entry = dtypes[std::string(d.dtype)] =
            {{"tensors", d.tensors}, {"parameters", d.parameters}, {"nbytes", d.nbytes}};
        if (d.parameters > 0) entry["bits_per_weight"] = bits_per_weight(d.nbytes, d.parameters);
    }
    return json;
}

}  // namespace

double bits_per_weight(std::uint64_t nbytes, std::uint64_t parameters) {
    return 8.0 * static_cast<double>(nbytes) / static_cast<double>(parameters);
}

ModelFigures model_figures(const Catalog& catalog) {
    ModelFigures figures;
    for (const Tensor& tensor : catalog.tensors) {
        figures.nbytes += tensor.nbytes;
        // A quantized weight's parameters are its logical elements, and its bytes those of all its parts: the parts
        // themselves are no parameters.
        if (tensor.quantization_part) continue;
        std::uint64_t nbytes = tensor.nbytes;
        if (tensor.quantization) {
            for (std::size_t i = 1; i < tensor.quantization->parts.size(); ++i) {
                nbytes += tensor.quantization->parts[i].stored.nbytes;
            }
        }
        figures.parameters += tensor.elements;
        const std::string_view dtype = tensor.quantization ? quantized_dtype(*tensor.quantization) : tensor.type->name;
        auto same_dtype = [&](const DtypeFigures& d) { return d.dtype == dtype; };
        auto it = std::find_if(figures.dtypes.begin(), figures.dtypes.end(), same_dtype);
        if (it == figures.dtypes.end()) it = figures.dtypes.insert(it, DtypeFigures{dtype});
        it->tensors += 1;
        it->parameters += tensor.elements;
        it->nbytes += nbytes;
    }
    if (figures.parameters > 0) figures.bits_per_weight = bits_per_weight(figures.nbytes, figures.parameters);
    std::stable_sort(figures.dtypes.begin(), figures.dtypes.end(), [](const DtypeFigures& a, const DtypeFigures& b) {
        return a.parameters != b.parameters ? a.parameters > b.parameters : a.dtype < b.dtype;
    });
    return figures;
}

nlohmann::ordered_json with_figures(const nlohmann::ordered_json& model, const ModelFigures& figures) {
    nlohmann::ordered_json info;
    for (const auto& [key, value] : model.items()) {
        info[key] = value;
        if (key == "total_nbytes") info.update(figures_json(figures));
    }
    return info;
}

nlohmann::ordered_json info_json(const Catalog& catalog, const Tree& tree, const ModelFigures& figures) {
    const ModelExport model_export(catalog, ExportDtype::Keep);
    return with_figures(model_meta(catalog, tree, &model_export), figures);
}

}  // namespace tensorfs
