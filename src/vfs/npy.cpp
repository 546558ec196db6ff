#include "npy.hpp"

namespace tensorfs {
namespace {

constexpr std::size_t kAlignment = 64;
constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = sizeof kMagic - 1;

std::string shape_tuple(const std::vector<std::uint64_t>& shape) {
    std::string text = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) text += ", ";
        text += std::to_string(shape[i]);
    }
    if (shape.size() == 1) text += ",";
    return text + ")";
}

}  // namespace

std::string npy_header_f32(const std::vector<std::uint64_t>& shape) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
    // Version 1.0 stores the header length in 2 bytes, 2.0 in 4.
    const bool version2 = kMagicSize + 2 + 2 + dict.size() + 1 > 0xFFFF;
    const std::size_t prefix = kMagicSize + 2 + (version2 ? 4 : 2);
    const std::size_t unpadded = prefix + dict.size() + 1;  // + the closing newline
    dict.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
    dict += '\n';

    std::string header(kMagic, kMagicSize);
    header += static_cast<char>(version2 ? 2 : 1);
    header += '\0';
    const std::size_t length = dict.size();
    header += static_cast<char>(length & 0xFF);
    header += static_cast<char>((length >> 8) & 0xFF);
    if (version2) {
        header += static_cast<char>((length >> 16) & 0xFF);
        header += static_cast<char>((length >> 24) & 0xFF);
    }
    return header + dict;
}

}  // namespace tensorfs
