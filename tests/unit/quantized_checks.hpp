// What the tests of the quantized kernels (tensorfs/quantized_kernels.hpp) share: running a kernel into an output
// between canaries, and comparing floats bit for bit, NaN payloads included.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ios>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

namespace tensorfs::test {

inline float from_bits(std::uint32_t bits) { return std::bit_cast<float>(bits); }

// The `count` values `kernel` writes at the pointer it is given, which sits one float past a 64-byte boundary
// (catching aligned-store assumptions) between canaries that must survive.
inline std::vector<float> fenced_output(std::size_t count, const std::function<void(float*)>& kernel,
                                        const std::string& what) {
    constexpr std::size_t kFence = 17;
    constexpr std::uint32_t kCanary = 0x7FA5A5A5u;  // a signalling NaN: no kernel makes one
    std::vector<float> fenced(kFence + count + kFence + 16, std::bit_cast<float>(kCanary));
    auto* start = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(fenced.data()) + 63) / 64 * 64);
    float* out = start + kFence;
    kernel(out);
    const auto intact = [&](const float* from) {
        return std::all_of(from, from + kFence, [&](float f) { return std::bit_cast<std::uint32_t>(f) == kCanary; });
    };
    BOOST_CHECK_MESSAGE(intact(start) && intact(out + count), what << ": the kernel wrote outside its output");
    return {out, out + count};
}

// Checks that `actual` has the bits of `expected`, naming the first value that differs.
inline void check_same_bits(const std::vector<float>& expected, const std::vector<float>& actual,
                            const std::string& what) {
    BOOST_REQUIRE_EQUAL(expected.size(), actual.size());
    const auto differs = [&](std::size_t i) {
        return std::bit_cast<std::uint32_t>(expected[i]) != std::bit_cast<std::uint32_t>(actual[i]);
    };
    std::size_t first = 0;
    while (first < expected.size() && !differs(first)) ++first;
    BOOST_CHECK_MESSAGE(first == expected.size(),
                        what << ": value " << first << " is 0x" << std::hex
                             << (first < actual.size() ? std::bit_cast<std::uint32_t>(actual[first]) : 0u) << ", not 0x"
                             << (first < expected.size() ? std::bit_cast<std::uint32_t>(expected[first]) : 0u));
}

// Checks that `kernel`, run into a fenced output of expected.size() values, gives the bits of `expected`.
inline void check_output(const std::vector<float>& expected, const std::string& what,
                         const std::function<void(float*)>& kernel) {
    check_same_bits(expected, fenced_output(expected.size(), kernel, what), what);
}

}  // namespace tensorfs::test
