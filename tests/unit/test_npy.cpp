// The .npy header that dequant.npy starts with (NumPy format 1.0, as numpy.lib.format writes it).
#include <boost/test/unit_test.hpp>

#include "vfs/npy.hpp"

using namespace tensorfs;

BOOST_AUTO_TEST_SUITE(npy_header)

BOOST_AUTO_TEST_CASE(matches_what_numpy_writes) {
    // numpy.save of np.zeros((3, 512), '<f4') starts with exactly these 128 bytes.
    const std::string header = npy_header_f32({3, 512});
    const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 512), }";
    BOOST_TEST(header.size() == 128u);
    BOOST_TEST(header.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
    BOOST_TEST(static_cast<unsigned char>(header[8]) + 256 * static_cast<unsigned char>(header[9]) == 118);
    BOOST_TEST(header.substr(10, dict.size()) == dict);
    BOOST_TEST(header.back() == '\n');
    BOOST_TEST(header.find_first_not_of(' ', 10 + dict.size()) == header.size() - 1);
}

BOOST_AUTO_TEST_CASE(scalars_vectors_and_empty_shapes) {
    BOOST_TEST(npy_header_f32({}).find("'shape': (), }") != std::string::npos);
    BOOST_TEST(npy_header_f32({37}).find("'shape': (37,), }") != std::string::npos);
    BOOST_TEST(npy_header_f32({4, 0, 2}).find("'shape': (4, 0, 2), }") != std::string::npos);
    for (const auto& shape : {std::vector<std::uint64_t>{}, {1}, {123456789, 2, 3, 4}}) {
        BOOST_TEST(npy_header_f32(shape).size() % 64 == 0u);
    }
}

BOOST_AUTO_TEST_SUITE_END()
