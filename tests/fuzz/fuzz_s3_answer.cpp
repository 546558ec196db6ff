// libFuzzer target: an S3 answer (ListObjectsV2 page or error document) read by the XML reader. See fuzz_checks.hpp.
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    tensorfs::fuzz::check_s3_answer(data, size);
    return 0;
}
