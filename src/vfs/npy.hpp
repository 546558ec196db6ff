// The header of a NumPy .npy file holding little-endian float32 values in C order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tensorfs {

// Format 1.0 (2.0 only when the shape is too long for a 16-bit header length), padded with spaces so that the
// data starts on a 64-byte boundary as numpy itself writes it.
std::string npy_header_f32(const std::vector<std::uint64_t>& shape);

}  // namespace tensorfs
