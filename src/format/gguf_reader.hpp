// Bounded reading of a GGUF file's header. The file's size is known from the start and every read is checked
// against it, so a number read from the file can never make us read past its end or size a buffer larger than
// what is left of the file. Reads go through pread and a small window: the header is read without loading the
// (possibly tens of GB) file.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace tensorfs::gguf {

static_assert(std::endian::native == std::endian::little, "GGUF fields are little-endian; this reader copies them");

class HeaderReader {
public:
    // Opens `path` read-only. Throws InvalidSource when it cannot be opened or measured.
    explicit HeaderReader(std::string path);
    ~HeaderReader();
    HeaderReader(const HeaderReader&) = delete;
    HeaderReader& operator=(const HeaderReader&) = delete;

    const std::string& path() const { return path_; }
    std::uint64_t size() const { return size_; }
    std::uint64_t position() const { return position_; }
    std::uint64_t remaining() const { return size_ - position_; }

    // A little-endian fixed-size field; `what` names it in the error when the file ends first.
    template <typename T>
    T read(std::string_view what) {
        T value;
        copy(&value, sizeof value, what);
        return value;
    }

    // A GGUF string: u64 byte length, then the bytes, kept exactly as stored (no UTF-8 check).
    std::string read_string(std::string_view what);

    // Moves to `position` (at most the file size); used to step over the padding before the data section.
    void seek(std::uint64_t position, std::string_view what);

    // Throws InvalidSource for this file: `what` (at byte `at_byte`).
    [[noreturn]] void fail(const std::string& what, std::uint64_t at_byte) const;

private:
    void copy(void* dst, std::uint64_t length, std::string_view what);
    void pread_exact(void* dst, std::uint64_t length, std::uint64_t offset) const;

    std::string path_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
    std::uint64_t position_ = 0;
    std::vector<std::uint8_t> window_;   // bytes [window_start_, window_start_ + window_.size()) of the file
    std::uint64_t window_start_ = 0;
};

// `text` between single quotes, with control bytes, quotes and backslashes written as \xNN, so that a name from a
// file stays on one line of an error message.
std::string in_quotes(std::string_view text);

}  // namespace tensorfs::gguf
