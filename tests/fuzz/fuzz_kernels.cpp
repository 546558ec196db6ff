// libFuzzer target: a ggml type's blocks through its portable and fast dequant kernels. See fuzz_checks.hpp.
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    tensorfs::fuzz::check_kernels(data, size);
    return 0;
}
