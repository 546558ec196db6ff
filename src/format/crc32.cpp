#include "crc32.hpp"

#include <array>

namespace tensorfs {
namespace {

// Byte-at-a-time table of the reflected polynomial 0xEDB88320.
constexpr auto kTable = [] {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t byte = 0; byte < 256; ++byte) {
        std::uint32_t crc = byte;
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0xEDB88320u : 0u);
        table[byte] = crc;
    }
    return table;
}();

}  // namespace

std::uint32_t crc32(std::string_view bytes) {
    std::uint32_t crc = 0xFFFFFFFFu;
    for (const char c : bytes) crc = (crc >> 8) ^ kTable[(crc ^ static_cast<unsigned char>(c)) & 0xFFu];
    return crc ^ 0xFFFFFFFFu;
}

}  // namespace tensorfs
