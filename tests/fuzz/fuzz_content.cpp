// libFuzzer target: a source opened as a catalog, then ranges of every file kind read through Content, as the
// FUSE adapter would, without mounting. See fuzz_checks.hpp.
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    tensorfs::fuzz::check_content(data, size);
    return 0;
}
