// The generated src/dequant/ggml_tables.* against the json they are generated from, so that a stale or
// hand-edited generation fails here (regenerate with scripts/gen-ggml-tables, see the files' header).
#include <array>
#include <fstream>
#include <string>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "dequant/ggml_tables.hpp"
#include "vectors.hpp"

namespace {

const nlohmann::json& tables_json() {
    static const nlohmann::json parsed = [] {
        std::ifstream in(tensorfs::test::vectors_path("ggml-tables.json"));
        return nlohmann::json::parse(in);
    }();
    return parsed;
}

template <typename T, std::size_t N>
void check_table(const std::array<T, N>& generated, const std::string& name) {
    const auto& entry = tables_json().at("tables").at(name);
    const auto& values = entry.at("values");
    BOOST_REQUIRE_MESSAGE(values.size() == N, name << ": " << N << " entries generated, json has " << values.size());
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < N; ++i) {
        if (values[i].get<T>() != generated[i] && mismatches++ == 0) {
            BOOST_ERROR(name << "[" << i << "] differs from the json");
        }
    }
    BOOST_CHECK_MESSAGE(mismatches == 0, name << ": " << mismatches << " entries differ");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ggml_tables)

BOOST_AUTO_TEST_CASE(every_generated_table_equals_the_json) {
    namespace t = tensorfs::ggml_tables;
    check_table(t::ksigns_iq2xs, "ksigns_iq2xs");
    check_table(t::iq2xxs_grid, "iq2xxs_grid");
    check_table(t::iq2xs_grid, "iq2xs_grid");
    check_table(t::iq2s_grid, "iq2s_grid");
    check_table(t::iq3xxs_grid, "iq3xxs_grid");
    check_table(t::iq3s_grid, "iq3s_grid");
    check_table(t::iq1s_grid, "iq1s_grid");
    check_table(t::kvalues_iq4nl, "kvalues_iq4nl");
    check_table(t::kvalues_fp4, "kvalues_fp4");
}

BOOST_AUTO_TEST_CASE(known_entries) {
    namespace t = tensorfs::ggml_tables;
    // Independent of the json: values any ggml source shows at a glance.
    BOOST_TEST(t::kvalues_iq4nl[0] == -127);
    BOOST_TEST(t::kvalues_iq4nl[15] == 113);
    BOOST_TEST(t::kvalues_fp4[7] == 12);   // E2M1 6.0, doubled
    BOOST_TEST(t::kvalues_fp4[15] == -12);
    BOOST_TEST(t::ksigns_iq2xs[1] == 129);  // one stored sign bit: parity sets bit 7
    BOOST_TEST(t::iq2xxs_grid[0] == 0x0808080808080808ull);
    BOOST_TEST(t::iq1s_grid[0] == 0xFFFFFFFFFFFFFFFFull);  // eight -1
}

BOOST_AUTO_TEST_CASE(iq1s_delta_equals_the_json_constant) {
    const auto& constants = tables_json().at("constants");
    BOOST_TEST(tensorfs::ggml_tables::iq1s_delta == constants.at("IQ1S_DELTA").get<double>());
    BOOST_TEST(tensorfs::ggml_tables::iq1s_grid.size() == constants.at("NGRID_IQ1S").get<std::size_t>());
}

BOOST_AUTO_TEST_SUITE_END()
