#include "diff_permutation.hpp"

namespace tensorfs::compare {

bool permutable(std::uint64_t rows, std::uint64_t heads) {
    return heads > 0 && rows % heads == 0 && (rows / heads) % 2 == 0;
}

std::uint64_t gguf_row_of(std::uint64_t hf_row, std::uint64_t rows, std::uint64_t heads) {
    const std::uint64_t per_head = rows / heads;
    const std::uint64_t half = per_head / 2;
    const std::uint64_t head = hf_row / per_head, within = hf_row % per_head;
    return head * per_head + 2 * (within % half) + within / half;
}

}  // namespace tensorfs::compare
