// CRC-32 (ISO-HDLC, the polynomial zip and gzip use), to check the small zip entries that are read whole.
#pragma once

#include <cstdint>
#include <string_view>

namespace tensorfs {

std::uint32_t crc32(std::string_view bytes);

}  // namespace tensorfs
