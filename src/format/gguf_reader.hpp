// Bounded reading of a GGUF file's header. The file's size is known from the start and every read is checked
// against it, so a number read from the file can never make us read past its end or size a buffer larger than
// what is left of the file. Reads go through a window that doubles each time it moves on: the header is read
// without loading the (possibly tens of GB) file, and a remote file's header in a few growing range requests.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tensorfs/errors.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::gguf {

static_assert(std::endian::native == std::endian::little, "GGUF fields are little-endian; this reader copies them");

class HeaderReader {
public:
    explicit HeaderReader(const SourceObject& file);
    HeaderReader(const HeaderReader&) = delete;
    HeaderReader& operator=(const HeaderReader&) = delete;

    const std::string& path() const { return file_.name(); }
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

    // Throws SourceError for this file: `what` (at byte `at_byte`); of kind Unsupported for a valid file of a
    // variant tensorfs does not read.
    [[noreturn]] void fail(const std::string& what, std::uint64_t at_byte,
                           ErrorKind kind = ErrorKind::InvalidSource) const;

private:
    void copy(void* dst, std::uint64_t length, std::string_view what);
    void read_exact(void* dst, std::uint64_t length, std::uint64_t offset) const;

    const SourceObject& file_;
    std::uint64_t size_ = 0;
    std::uint64_t position_ = 0;
    std::vector<std::uint8_t> window_;   // bytes [window_start_, window_start_ + window_.size()) of the file
    std::uint64_t window_start_ = 0;
    std::uint64_t next_window_bytes_;    // the size of the next window: doubles up to a limit
};

// `text` between single quotes, with control bytes, quotes, backslashes and bytes that are not UTF-8 written as \xNN,
// so that a name from a file stays on one line of an error message and reaches a terminal as text.
std::string in_quotes(std::string_view text);

}  // namespace tensorfs::gguf
