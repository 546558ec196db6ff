// What a config.json (and ModelOpt's hf_quant_config.json) declares of a model's quantization, as published
// checkpoints of each method write it, and configs that declare nothing usable: a key of the wrong kind is unknown,
// never an error or a guess.
#include <boost/test/unit_test.hpp>

#include "format/quantization_config.hpp"

using namespace tensorfs;

namespace {

std::optional<DeclaredQuantization> declared(const std::string& quantization_config,
                                             const std::string& hf_quant_config = "") {
    return declared_quantization(R"({"model_type": "llama", "quantization_config": )" + quantization_config + "}",
                                 hf_quant_config);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(quantization_config)

BOOST_AUTO_TEST_CASE(each_method_as_published) {
    const auto fp8 = declared(R"({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 64]})");
    BOOST_TEST_REQUIRE(fp8.has_value());
    BOOST_TEST((fp8->scheme == QuantScheme::Fp8Block));
    BOOST_TEST(fp8->block_rows == 128u);
    BOOST_TEST(fp8->block_columns == 64u);
    BOOST_TEST(fp8->unsupported.empty());

    const auto gptq = declared(R"({"quant_method": "gptq", "bits": 8, "group_size": -1, "desc_act": true,
                                   "checkpoint_format": "gptq_v2"})");
    BOOST_TEST_REQUIRE(gptq.has_value());
    BOOST_TEST((gptq->scheme == QuantScheme::Gptq));
    BOOST_TEST((gptq->bits == std::vector<unsigned>{8}));
    BOOST_TEST(gptq->per_row);
    BOOST_TEST(gptq->desc_act);
    BOOST_TEST(gptq->gptq_v2);

    const auto awq = declared(R"({"quant_method": "AWQ", "bits": 4, "group_size": 128, "version": "GEMM"})");
    BOOST_TEST_REQUIRE(awq.has_value());
    BOOST_TEST((awq->scheme == QuantScheme::Awq));
    BOOST_TEST(awq->group_size == 128u);
    BOOST_TEST(awq->unsupported.empty());

    const auto pack = declared(R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
        "config_groups": {"group_0": {"weights": {"num_bits": 4, "strategy": "group", "group_size": 64}},
                          "group_1": {"weights": {"num_bits": 8, "strategy": "channel"}}}})");
    BOOST_TEST_REQUIRE(pack.has_value());
    BOOST_TEST((pack->scheme == QuantScheme::PackQuantized));
    BOOST_TEST((pack->bits == std::vector<unsigned>{4, 8}));
    BOOST_TEST(pack->per_row);

    const auto mxfp4 = declared(R"({"quant_method": "mxfp4"})");
    BOOST_TEST_REQUIRE(mxfp4.has_value());
    BOOST_TEST((mxfp4->scheme == QuantScheme::Mxfp4));

    // ModelOpt: in config.json, or only in hf_quant_config.json.
    const auto nvfp4 = declared(R"({"quant_method": "modelopt", "quant_algo": "NVFP4"})");
    BOOST_TEST_REQUIRE(nvfp4.has_value());
    BOOST_TEST((nvfp4->scheme == QuantScheme::Nvfp4));
    const auto only_file = declared_quantization(R"({"model_type": "llama"})",
                                                 R"({"quantization": {"quant_algo": "NVFP4", "group_size": 16}})");
    BOOST_TEST_REQUIRE(only_file.has_value());
    BOOST_TEST((only_file->scheme == QuantScheme::Nvfp4));
}

BOOST_AUTO_TEST_CASE(variants_not_decoded_are_said) {
    BOOST_TEST(declared(R"({"quant_method": "awq", "version": "gemv"})")->unsupported.find("gemv") !=
               std::string::npos);
    BOOST_TEST(declared(R"({"quant_method": "gptq", "checkpoint_format": "marlin"})")->unsupported.find("marlin") !=
               std::string::npos);
    BOOST_TEST(declared(R"({"quant_method": "fp8", "fmt": "e5m2"})")->unsupported.find("e5m2") != std::string::npos);
    BOOST_TEST(declared(R"({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"})")
                   ->unsupported.find("nvfp4-pack-quantized") != std::string::npos);
    const auto bnb = declared(R"({"quant_method": "bitsandbytes", "load_in_4bit": true})");
    BOOST_TEST_REQUIRE(bnb.has_value());
    BOOST_TEST(!bnb->scheme.has_value());
}

BOOST_AUTO_TEST_CASE(keys_of_the_wrong_kind_are_unknown) {
    const auto odd = declared(R"({"quant_method": "gptq", "bits": "4", "group_size": 1e30, "desc_act": "yes",
                                  "weight_block_size": [0, -1]})");
    BOOST_TEST_REQUIRE(odd.has_value());
    BOOST_TEST(odd->bits.empty());
    BOOST_TEST(odd->group_size == 0u);
    BOOST_TEST(!odd->desc_act);
    const auto huge = declared(R"({"quant_method": "fp8", "weight_block_size": [18446744073709551615, 128]})");
    BOOST_TEST(huge->block_rows == 0u);
    const auto bits = declared(R"({"quant_method": "gptq", "bits": 4000000000})");
    BOOST_TEST(bits->bits.empty());
}

BOOST_AUTO_TEST_CASE(configs_that_declare_nothing) {
    BOOST_TEST(!declared_quantization(R"({"model_type": "llama"})", "").has_value());
    BOOST_TEST(!declared_quantization("not json {", "").has_value());
    BOOST_TEST(!declared_quantization("[1, 2]", "").has_value());
    BOOST_TEST(!declared_quantization("", "").has_value());
    BOOST_TEST(!declared(R"("fp8")").has_value());
    BOOST_TEST(!declared(R"({"quant_method": 8})").has_value());
    BOOST_TEST(!declared(R"({"quant_method": "compressed-tensors", "format": "dense"})").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
