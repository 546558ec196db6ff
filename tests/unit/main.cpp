#define BOOST_TEST_MODULE tensorfs unit tests
#include <boost/test/unit_test.hpp>
