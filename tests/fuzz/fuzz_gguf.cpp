// libFuzzer target: a GGUF file, or part 1 of a split set (parts 2 and 3 beside it). See fuzz_checks.hpp.
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    tensorfs::fuzz::check_gguf_file(data, size);
    return 0;
}
