#include "gguf_reader.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "tensorfs/errors.hpp"

namespace tensorfs::gguf {
namespace {

// Small reads (the many scalars and short strings of a header) are served from a window: 64 KiB first, then
// twice the last size up to 16 MiB, so that a header of any size takes few reads (range requests when remote).
constexpr std::uint64_t kFirstWindowBytes = 64 * 1024;
constexpr std::uint64_t kLargestWindowBytes = 16 * 1024 * 1024;

// ggml's limit on one string, so that a single string field cannot claim gigabytes of memory.
constexpr std::uint64_t kMaxStringBytes = std::uint64_t{1} << 30;

}  // namespace

HeaderReader::HeaderReader(const SourceObject& file)
    : file_(file), size_(file.size()), next_window_bytes_(kFirstWindowBytes) {}

void HeaderReader::fail(const std::string& what, std::uint64_t at_byte, ErrorKind kind) const {
    throw SourceError({Problem{path(), what, at_byte, kind}});
}

std::string HeaderReader::read_string(std::string_view what) {
    const std::uint64_t at = position_;
    const auto length = read<std::uint64_t>(what);
    if (length > remaining()) {
        fail(std::string(what) + " claims " + std::to_string(length) + " bytes but only " +
                 std::to_string(remaining()) + " are left in the file",
             at);
    }
    if (length > kMaxStringBytes) {
        fail(std::string(what) + " is " + std::to_string(length) + " bytes long, more than the 1 GiB limit", at);
    }
    std::string text(length, '\0');
    copy(text.data(), length, what);
    return text;
}

void HeaderReader::seek(std::uint64_t position, std::string_view what) {
    if (position > size_) {
        fail("file ends before " + std::string(what) + " at byte " + std::to_string(position) + " (file has " +
                 std::to_string(size_) + " bytes)",
             position_);
    }
    position_ = position;
}

void HeaderReader::copy(void* dst, std::uint64_t length, std::string_view what) {
    if (length > remaining()) {
        fail("file ends inside " + std::string(what) + ": needs " + std::to_string(length) + " bytes, " +
                 std::to_string(remaining()) + " left",
             position_);
    }
    auto* out = static_cast<std::uint8_t*>(dst);
    while (length > 0) {
        const bool in_window = position_ >= window_start_ && position_ < window_start_ + window_.size();
        if (in_window) {
            const std::uint64_t skip = position_ - window_start_;
            const std::uint64_t take = std::min<std::uint64_t>(length, window_.size() - skip);
            std::memcpy(out, window_.data() + skip, take);
            out += take;
            position_ += take;
            length -= take;
        } else if (length >= next_window_bytes_) {
            read_exact(out, length, position_);  // a big string: straight into its destination
            position_ += length;
            length = 0;
        } else {
            window_.resize(std::min(next_window_bytes_, remaining()));
            window_start_ = position_;
            read_exact(window_.data(), window_.size(), window_start_);
            next_window_bytes_ = std::min(next_window_bytes_ * 2, kLargestWindowBytes);
        }
    }
}

void HeaderReader::read_exact(void* dst, std::uint64_t length, std::uint64_t offset) const {
    try {
        file_.read(offset, static_cast<std::size_t>(length), dst);
    } catch (const IoError& error) {
        fail(std::string("cannot read: ") + error.reason(), offset);
    }
}

std::string in_quotes(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out = "'";
    for (std::size_t at = 0; at < text.size();) {
        const auto byte = static_cast<unsigned char>(text[at]);
        const std::size_t length = byte < 0x80 ? 1 : utf8_sequence(text.substr(at));
        if (length > 1) {
            out.append(text.substr(at, length));
            at += length;
            continue;
        }
        // A byte that is no character of UTF-8 (a bad magic's 0x89) would reach a terminal raw.
        if (length == 0 || byte < 0x20 || byte == 0x7F || byte == '\'' || byte == '\\') {
            out += "\\x";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xF];
        } else {
            out += static_cast<char>(byte);
        }
        ++at;
    }
    return out + "'";
}

}  // namespace tensorfs::gguf
