// Serves byte ranges of a tensor's float32 view by decoding only the whole blocks that cover them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensorfs/catalog.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/stats.hpp"

namespace tensorfs {

class DequantReader {
public:
    DequantReader(const Catalog& catalog, const SourceFiles& files, Stats& stats);

    // Copies bytes [offset, offset + length) of the tensor's little-endian float32 values into `dst`.
    // The range must lie inside the tensor's f32 size. Throws IoError when the source cannot be read.
    void read(std::uint32_t tensor, std::uint64_t offset, std::size_t length, char* dst) const;

private:
    const Catalog& catalog_;
    const SourceFiles& files_;
    Stats& stats_;
};

}  // namespace tensorfs
