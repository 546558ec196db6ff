// libFuzzer target: a *.safetensors.index.json (with the sharded vectors' shards beside it). See fuzz_checks.hpp.
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    tensorfs::fuzz::check_safetensors_index(data, size);
    return 0;
}
