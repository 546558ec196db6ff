// libFuzzer target: a checkpoint's pickle (data.pkl) through the restricted pickle machine. See fuzz_checks.hpp.
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    tensorfs::fuzz::check_pickle(data, size);
    return 0;
}
