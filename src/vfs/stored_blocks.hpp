// The stored bytes of a run of a tensor's blocks, in C order, for the dequant kernels. For most tensors that is one
// read of their raw bytes; a PyTorch view that is not contiguous (Tensor::strided) is gathered element by element
// from the bytes its elements span.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/source_files.hpp"

namespace tensorfs {

// Bytes wanted from a source file that lie closer than this are read together, the gap between them too: one read
// of a few KiB costs less than two reads. No such read is longer than kLongestGatherRead.
inline constexpr std::uint64_t kNearbyBytes = 4 << 10;
inline constexpr std::uint64_t kLongestGatherRead = 1 << 20;

// Reads `length` bytes at `offset` of a tensor's raw bytes into `dst`; throws IoError.
using ReadRaw = std::function<void(std::uint64_t offset, std::size_t length, void* dst)>;

// Copies the stored bytes of elements [first, first + count) of a strided view, in C order, to `dst`
// (count * element_bytes bytes). The element of index (i0, i1, ...) lies at byte
// (i0 * stride[0] + i1 * stride[1] + ...) * element_bytes of the raw bytes, which `read` reads. Reads go in the
// order of the raw bytes and take nearby elements together, so a transposed matrix costs few reads.
void gather_strided(const std::vector<std::uint64_t>& shape, const std::vector<std::uint64_t>& stride,
                    std::size_t element_bytes, std::uint64_t first, std::uint64_t count, const ReadRaw& read,
                    std::uint8_t* dst);

// The stored bytes of blocks [first_block, first_block + blocks) of `tensor` in C order, to `dst`
// (blocks * block_bytes bytes). Throws IoError when the source cannot be read.
void read_stored_blocks(const SourceFiles& files, const Tensor& tensor, std::uint64_t first_block,
                        std::uint64_t blocks, std::uint8_t* dst);

// The same, with the tensor's raw bytes read by `read` (offsets relative to the tensor's first stored byte).
void read_stored_blocks(const Tensor& tensor, std::uint64_t first_block, std::uint64_t blocks, const ReadRaw& read,
                        std::uint8_t* dst);

}  // namespace tensorfs
