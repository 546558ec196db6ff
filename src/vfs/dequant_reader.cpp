#include "tensorfs/dequant_reader.hpp"

#include <chrono>
#include <cstring>
#include <vector>

namespace tensorfs {

DequantReader::DequantReader(const Catalog& catalog, const SourceFiles& files, Stats& stats)
    : catalog_(catalog), files_(files), stats_(stats) {}

void DequantReader::read(std::uint32_t index, std::uint64_t offset, std::size_t length, char* dst) const {
    if (length == 0) return;
    const Tensor& tensor = catalog_.tensors[index];
    const TypeTraits& type = *tensor.type;
    const std::uint64_t bytes_per_block = std::uint64_t{type.block_elements} * 4;
    const std::uint64_t first_block = offset / bytes_per_block;
    const std::uint64_t end_block = (offset + length + bytes_per_block - 1) / bytes_per_block;
    const std::uint64_t blocks = end_block - first_block;

    std::vector<std::uint8_t> stored(blocks * type.block_bytes);
    files_.read_exact(tensor.file, tensor.offset + first_block * type.block_bytes, stored.size(), stored.data());

    std::vector<float> values(blocks * type.block_elements);
    const auto started = std::chrono::steady_clock::now();
    active_kernel(type)(stored.data(), blocks, values.data());
    const auto elapsed = std::chrono::steady_clock::now() - started;
    stats_.decode_nanoseconds.add(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
    stats_.bytes_decoded.add(values.size() * 4);

    std::memcpy(dst, reinterpret_cast<const char*>(values.data()) + (offset - first_block * bytes_per_block), length);
}

}  // namespace tensorfs
