// The parts of `tensorfs diff` that need no checkpoint: the metric sums against a plain float64 loop (finite runs,
// NaN and infinity, pieces merged), the figures made from them at their edges, the Hugging Face -> GGUF name map
// and the row order of llama's q/k weights against a simulation of the converter's reshape and swap.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "compare/diff_gguf_names.hpp"
#include "compare/diff_metrics.hpp"
#include "compare/diff_permutation.hpp"

using namespace tensorfs::compare;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The sums written the plain way, one position at a time.
DiffSums reference_sums(const std::vector<float>& a, const std::vector<float>& b) {
    DiffSums sums;
    for (std::size_t i = 0; i < a.size(); ++i) {
        ++sums.elements;
        sums.nan_a += std::isnan(a[i]);
        sums.nan_b += std::isnan(b[i]);
        sums.inf_a += std::isinf(a[i]);
        sums.inf_b += std::isinf(b[i]);
        if (a[i] != b[i] && !(std::isnan(a[i]) && std::isnan(b[i]))) ++sums.differing;
        if (!std::isfinite(a[i]) || !std::isfinite(b[i])) continue;
        const double x = a[i], y = b[i];
        ++sums.compared;
        sums.max_abs_diff = std::max(sums.max_abs_diff, std::fabs(x - y));
        sums.sum_sq_diff += (x - y) * (x - y);
        sums.sum_sq_a += x * x;
        sums.sum_sq_b += y * y;
        sums.sum_ab += x * y;
    }
    return sums;
}

void check_same(const DiffSums& got, const DiffSums& want) {
    BOOST_TEST(got.elements == want.elements);
    BOOST_TEST(got.compared == want.compared);
    BOOST_TEST(got.differing == want.differing);
    BOOST_TEST(got.nan_a == want.nan_a);
    BOOST_TEST(got.nan_b == want.nan_b);
    BOOST_TEST(got.inf_a == want.inf_a);
    BOOST_TEST(got.inf_b == want.inf_b);
    BOOST_TEST(got.max_abs_diff == want.max_abs_diff);
    const auto close = boost::test_tools::tolerance(1e-12);
    BOOST_TEST(got.sum_sq_diff == want.sum_sq_diff, close);
    BOOST_TEST(got.sum_sq_a == want.sum_sq_a, close);
    BOOST_TEST(got.sum_sq_b == want.sum_sq_b, close);
    BOOST_TEST(got.sum_ab == want.sum_ab, close);
}

std::pair<std::vector<float>, std::vector<float>> noisy_pair(std::size_t count) {
    std::mt19937 random(21);
    std::normal_distribution<float> normal;
    std::vector<float> a(count), b(count);
    for (std::size_t i = 0; i < count; ++i) {
        a[i] = normal(random);
        b[i] = i % 5 == 0 ? a[i] : a[i] + 0.01f * normal(random);
    }
    return {a, b};
}

// The converter's LlamaModel.permute on row numbers: reshape (heads, 2, rows/heads/2), swap the last two axes.
std::vector<std::uint64_t> converter_order(std::uint64_t rows, std::uint64_t heads) {
    const std::uint64_t half = rows / heads / 2;
    std::vector<std::uint64_t> order;
    for (std::uint64_t head = 0; head < heads; ++head) {
        for (std::uint64_t j = 0; j < half; ++j) {
            for (std::uint64_t i = 0; i < 2; ++i) order.push_back(head * 2 * half + i * half + j);
        }
    }
    return order;   // order[gguf row] = Hugging Face row
}

GgufModel model(const char* architecture) { return GgufModel{architecture, 32, 8}; }

}  // namespace

BOOST_AUTO_TEST_SUITE(diff_metrics)

BOOST_AUTO_TEST_CASE(sums_match_a_plain_loop_over_runs_and_tails) {
    for (const std::size_t count : {0u, 1u, 63u, 64u, 65u, 1000u, 4099u}) {
        const auto [a, b] = noisy_pair(count);
        DiffSums sums;
        sums.add(a.data(), b.data(), count);
        check_same(sums, reference_sums(a, b));
    }
}

BOOST_AUTO_TEST_CASE(non_finite_values_are_counted_apart) {
    auto [a, b] = noisy_pair(300);
    a[10] = kNaN;
    b[10] = kNaN;    // NaN against NaN: equal
    a[70] = kNaN;    // NaN against a number: differs
    b[130] = kInf;
    a[131] = -kInf;
    b[131] = -kInf;  // the same infinity: equal
    DiffSums sums;
    sums.add(a.data(), b.data(), a.size());
    check_same(sums, reference_sums(a, b));
    BOOST_TEST(sums.compared == 296u);
    BOOST_TEST(sums.nan_a == 2u);
    BOOST_TEST(sums.nan_b == 1u);
    BOOST_TEST(sums.inf_a == 1u);
    BOOST_TEST(sums.inf_b == 2u);
    BOOST_TEST(std::isfinite(sums.sum_sq_diff));
}

BOOST_AUTO_TEST_CASE(pieces_merged_equal_one_run) {
    const auto [a, b] = noisy_pair(1000);
    DiffSums whole, first, second;
    whole.add(a.data(), b.data(), 1000);
    first.add(a.data(), b.data(), 333);
    second.add(a.data() + 333, b.data() + 333, 667);
    first.merge(second);
    check_same(first, whole);
}

BOOST_AUTO_TEST_CASE(signed_zeros_are_equal) {
    const std::vector<float> a{0.0f, 1.0f}, b{-0.0f, 1.0f};
    DiffSums sums;
    sums.add(a.data(), b.data(), 2);
    BOOST_TEST(sums.differing == 0u);
}

BOOST_AUTO_TEST_CASE(figures_of_known_sums) {
    DiffSums sums;
    sums.compared = 4;
    sums.sum_sq_a = 16;     // RMS of A: 2
    sums.sum_sq_b = 9;
    sums.sum_ab = 12;
    sums.sum_sq_diff = 1;   // RMSE: 0.5
    const DiffMetrics metrics = metrics_of(sums);
    BOOST_TEST(metrics.rmse == 0.5);
    BOOST_TEST(metrics.relative_rmse == 0.25);
    BOOST_TEST(metrics.cosine == 1.0);
    BOOST_TEST(metrics.snr_db == 10 * std::log10(16.0), boost::test_tools::tolerance(1e-15));
}

BOOST_AUTO_TEST_CASE(figures_at_the_edges) {
    const DiffMetrics nothing = metrics_of(DiffSums{});
    BOOST_TEST(nothing.rmse == 0);
    BOOST_TEST(nothing.relative_rmse == 0);
    BOOST_TEST(std::isnan(nothing.cosine));
    BOOST_TEST((std::isinf(nothing.snr_db) && nothing.snr_db > 0));

    const std::vector<float> zeros(8, 0.0f), halves(8, 0.5f);
    DiffSums from_zero;
    from_zero.add(zeros.data(), halves.data(), 8);
    const DiffMetrics metrics = metrics_of(from_zero);
    BOOST_TEST(metrics.rmse == 0.5);
    BOOST_TEST((std::isinf(metrics.relative_rmse) && metrics.relative_rmse > 0));
    BOOST_TEST(std::isnan(metrics.cosine));
    BOOST_TEST((std::isinf(metrics.snr_db) && metrics.snr_db < 0));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(diff_names)

BOOST_AUTO_TEST_CASE(llama_names_and_permuted_heads) {
    const GgufModel llama = model("llama");
    const auto q = gguf_counterpart("model.layers.3.self_attn.q_proj.weight", llama);
    BOOST_REQUIRE(q);
    BOOST_TEST(q->name == "blk.3.attn_q.weight");
    BOOST_TEST(q->permuted_heads == 32u);
    const auto k = gguf_counterpart("model.layers.3.self_attn.k_proj.bias", llama);
    BOOST_REQUIRE(k);
    BOOST_TEST(k->name == "blk.3.attn_k.bias");
    BOOST_TEST(k->permuted_heads == 8u);
    const std::pair<const char*, const char*> plain[] = {
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"lm_head.weight", "output.weight"},
        {"model.norm.weight", "output_norm.weight"},
        {"model.layers.0.self_attn.v_proj.weight", "blk.0.attn_v.weight"},
        {"model.layers.0.self_attn.o_proj.weight", "blk.0.attn_output.weight"},
        {"model.layers.10.input_layernorm.weight", "blk.10.attn_norm.weight"},
        {"model.layers.10.post_attention_layernorm.weight", "blk.10.ffn_norm.weight"},
        {"model.layers.1.mlp.gate_proj.weight", "blk.1.ffn_gate.weight"},
        {"model.layers.1.mlp.up_proj.weight", "blk.1.ffn_up.weight"},
        {"model.layers.1.mlp.down_proj.weight", "blk.1.ffn_down.weight"},
    };
    for (const auto& [hf, gguf] : plain) {
        const auto counterpart = gguf_counterpart(hf, llama);
        BOOST_REQUIRE(counterpart);
        BOOST_TEST(counterpart->name == gguf);
        BOOST_TEST(counterpart->permuted_heads == 0u);
        BOOST_TEST(counterpart->added == 0.0f);
    }
    for (const char* unknown : {"model.layers.x.mlp.up_proj.weight", "model.layers.1.mlp.up_proj", "rope.freqs",
                                "model.layers.1.self_attn.q_norm.weight", "model.layers.1.mlp.gate_up_proj.weight"}) {
        BOOST_TEST(!gguf_counterpart(unknown, llama), unknown);
    }
}

BOOST_AUTO_TEST_CASE(other_architectures) {
    const auto qwen2 = gguf_counterpart("model.layers.2.self_attn.q_proj.bias", model("qwen2"));
    BOOST_REQUIRE(qwen2);
    BOOST_TEST(qwen2->name == "blk.2.attn_q.bias");
    BOOST_TEST(qwen2->permuted_heads == 0u);
    BOOST_TEST(gguf_counterpart("model.layers.2.self_attn.k_norm.weight", model("qwen3"))->name ==
               "blk.2.attn_k_norm.weight");
    BOOST_TEST(gguf_counterpart("model.layers.2.self_attn.qkv_proj.weight", model("phi3"))->name ==
               "blk.2.attn_qkv.weight");
    BOOST_TEST(gguf_counterpart("model.layers.2.mlp.gate_up_proj.weight", model("phi3"))->name ==
               "blk.2.ffn_up.weight");

    const GgufModel gemma2 = model("gemma2");
    const std::pair<const char*, const char*> norms[] = {
        {"model.layers.4.post_attention_layernorm.weight", "blk.4.post_attention_norm.weight"},
        {"model.layers.4.pre_feedforward_layernorm.weight", "blk.4.ffn_norm.weight"},
        {"model.layers.4.post_feedforward_layernorm.weight", "blk.4.post_ffw_norm.weight"},
        {"model.norm.weight", "output_norm.weight"},
    };
    for (const auto& [hf, gguf] : norms) {
        const auto counterpart = gguf_counterpart(hf, gemma2);
        BOOST_REQUIRE(counterpart);
        BOOST_TEST(counterpart->name == gguf);
        BOOST_TEST(counterpart->added == 1.0f);
    }
    BOOST_TEST(gguf_counterpart("model.layers.0.input_layernorm.weight", model("gemma"))->added == 1.0f);
    BOOST_TEST(gguf_counterpart("model.layers.0.mlp.up_proj.weight", model("gemma"))->added == 0.0f);
    BOOST_TEST(!has_gguf_name_map("falcon"));
    BOOST_TEST(!has_gguf_name_map(""));
    BOOST_TEST(!gguf_counterpart("model.embed_tokens.weight", model("falcon")));
}

BOOST_AUTO_TEST_CASE(rows_go_back_where_the_converter_took_them) {
    for (const auto& [rows, heads] : {std::pair<std::uint64_t, std::uint64_t>{8, 2}, {128, 4}, {64, 32}, {2, 1}}) {
        BOOST_REQUIRE(permutable(rows, heads));
        const std::vector<std::uint64_t> order = converter_order(rows, heads);
        std::vector<bool> hit(rows, false);
        for (std::uint64_t hf_row = 0; hf_row < rows; ++hf_row) {
            const std::uint64_t gguf_row = gguf_row_of(hf_row, rows, heads);
            BOOST_TEST(order[gguf_row] == hf_row);
            hit[gguf_row] = true;
        }
        BOOST_TEST(std::all_of(hit.begin(), hit.end(), [](bool h) { return h; }));
    }
    BOOST_TEST(gguf_row_of(1, 8, 2) == 2u);   // head 0: rows 0 1 2 3 are stored as 0 2 1 3
    BOOST_TEST(!permutable(12, 4));   // 3 rows a head: odd
    BOOST_TEST(!permutable(10, 4));
    BOOST_TEST(!permutable(8, 0));
}

BOOST_AUTO_TEST_SUITE_END()
