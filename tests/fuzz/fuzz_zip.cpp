// libFuzzer target: a PyTorch checkpoint file (zip archive or legacy format), parsed and read through Content.
// See fuzz_checks.hpp.
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    tensorfs::fuzz::check_pytorch_file(data, size);
    return 0;
}
