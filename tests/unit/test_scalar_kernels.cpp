// The plain element-type kernels against ggml's own outputs in the vectors.
#include <boost/test/unit_test.hpp>

#include "tensorfs/dtype.hpp"
#include "vectors.hpp"

using namespace tensorfs;

BOOST_AUTO_TEST_SUITE(scalar_kernels)

BOOST_AUTO_TEST_CASE(f16_every_bit_pattern) {
    const auto data = test::vectors_path("gguf/mixed.gguf");
    for (const auto& v : test::gguf_vectors()) {
        if (v.name != "allbits.f16" && v.name != "allbits.bf16") continue;
        const auto* type = ggml_type_by_id(v.type_id);
        BOOST_REQUIRE(type != nullptr);
        const auto raw = test::read_bytes(v.file, v.offset, v.nbytes);
        std::vector<float> out(v.elements);
        type->portable(raw.data(), v.elements, out.data());
        test::check_same_floats(test::read_f32_file(v.expected), out.data(), out.size(), v.name);
    }
}

BOOST_AUTO_TEST_SUITE_END()
