// libFuzzer target: one safetensors file's header and tensor table. See fuzz_checks.hpp.
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    tensorfs::fuzz::check_safetensors_file(data, size);
    return 0;
}
