#include "tensorfs/names.hpp"

#include <array>
#include <cstdint>
#include <cstdio>

namespace tensorfs {
namespace {

// Names of the root's own entries; a tensor may not take them. (".tensorfs" starts with a dot, so the
// leading-dot rule already keeps it free.)
constexpr std::array<std::string_view, 3> kReservedRootNames{"model.json", "model.safetensors", "source"};

void append_escaped(std::string& out, unsigned char byte) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    out += '%';
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
}

std::uint64_t fnv1a64(std::string_view bytes) {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (const unsigned char c : bytes) {
        hash ^= c;
        hash *= 0x100000001b3ull;
    }
    return hash;
}

// Cuts `name` so it ends before a UTF-8 continuation sequence is split, leaving at most `limit` bytes.
std::string_view cut_at_character(std::string_view name, std::size_t limit) {
    std::size_t end = limit;
    while (end > 0 && (static_cast<unsigned char>(name[end]) & 0xC0) == 0x80) --end;
    return name.substr(0, end);
}

bool is_reserved(std::string_view tensor_name, std::span<const std::string_view> also_reserved) {
    for (const auto root_name : kReservedRootNames) {
        if (tensor_name == root_name) return true;
    }
    for (const auto side_name : also_reserved) {
        if (tensor_name == side_name) return true;
    }
    return false;
}

// Whether byte `i` of a name is written as %XX.
bool must_escape(unsigned char byte, std::size_t i, bool reserved) {
    return byte == '%' || byte == '/' || byte == '\0' || (i == 0 && (byte == '.' || reserved));
}

}  // namespace

bool is_own_directory_name(std::string_view tensor_name, std::span<const std::string_view> also_reserved) {
    if (tensor_name.empty() || tensor_name.size() > kMaxDirectoryName) return false;
    const bool reserved = is_reserved(tensor_name, also_reserved);
    for (std::size_t i = 0; i < tensor_name.size(); ++i) {
        if (must_escape(static_cast<unsigned char>(tensor_name[i]), i, reserved)) return false;
    }
    return true;
}

std::string directory_name_for(std::string_view tensor_name, std::span<const std::string_view> also_reserved) {
    std::string out;
    out.reserve(tensor_name.size());
    const bool reserved = is_reserved(tensor_name, also_reserved);
    for (std::size_t i = 0; i < tensor_name.size(); ++i) {
        const auto byte = static_cast<unsigned char>(tensor_name[i]);
        if (must_escape(byte, i, reserved)) {
            append_escaped(out, byte);
        } else {
            out += static_cast<char>(byte);
        }
    }
    if (out.size() <= kMaxDirectoryName) return out;

    char suffix[18];
    std::snprintf(suffix, sizeof suffix, "~%016llx", static_cast<unsigned long long>(fnv1a64(tensor_name)));
    std::string cut(cut_at_character(out, kMaxDirectoryName - (sizeof suffix - 1)));
    // Never end on a partial %XX escape: drop it whole.
    const auto percent = cut.rfind('%');
    if (percent != std::string::npos && percent + 3 > cut.size()) cut.resize(percent);
    return cut + suffix;
}

}  // namespace tensorfs
