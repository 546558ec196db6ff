// libFuzzer target: a quantized model (config.json and a safetensors file) read through Content. See
// fuzz_checks.hpp.
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    tensorfs::fuzz::check_quantized_model(data, size);
    return 0;
}
