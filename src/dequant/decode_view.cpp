#include "tensorfs/decode_view.hpp"

#include <algorithm>
#include <vector>

#include "tensorfs/f32_to_16.hpp"

namespace tensorfs {
namespace {

// A 16-bit view decodes this many values at a time into a float32 buffer that stays in the L1 cache, and rounds
// them from there.
constexpr std::uint64_t kNarrowedAtOnce = 4096;

}  // namespace

void decode_blocks(const TypeTraits& type, const std::uint8_t* stored, std::uint64_t blocks, ValueView view,
                   void* out) {
    const DequantKernel kernel = active_kernel(type);
    if (view == ValueView::F32) {
        kernel(stored, static_cast<std::size_t>(blocks), static_cast<float*>(out));
        return;
    }
    const NarrowKernel narrow = view == ValueView::BF16 ? active_bf16_kernel() : active_f16_kernel();
    auto* narrowed = static_cast<std::uint16_t*>(out);
    const std::uint64_t blocks_at_once = std::max<std::uint64_t>(1, kNarrowedAtOnce / type.block_elements);
    thread_local std::vector<float> decoded;
    decoded.resize(blocks_at_once * type.block_elements);
    for (std::uint64_t block = 0; block < blocks; block += blocks_at_once) {
        const std::uint64_t count = std::min(blocks_at_once, blocks - block);
        kernel(stored + block * type.block_bytes, static_cast<std::size_t>(count), decoded.data());
        narrow(decoded.data(), count * type.block_elements, narrowed + block * type.block_elements);
    }
}

}  // namespace tensorfs
