// Checks on the words of a refusal (an error message), shared by the parsers' tests.
#pragma once

#include <string>

#include <boost/test/unit_test.hpp>

namespace tensorfs::test {

// The refusal says `words` somewhere; a failure prints the whole refusal.
inline void check_says(const std::string& refusal, const std::string& words) {
    BOOST_TEST_CONTEXT(refusal) { BOOST_TEST(refusal.find(words) != std::string::npos); }
}

}  // namespace tensorfs::test
