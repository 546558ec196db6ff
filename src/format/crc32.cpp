#include "crc32.hpp"

#include <zlib.h>

namespace tensorfs {

std::uint32_t crc32(std::string_view bytes) {
    // zlib's, the one zip's own tools use; crc32_z takes a size_t length.
    return static_cast<std::uint32_t>(
        ::crc32_z(0UL, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<z_size_t>(bytes.size())));
}

}  // namespace tensorfs
