#include "gguf_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "tensorfs/errors.hpp"

namespace tensorfs::gguf {
namespace {

// Small reads (the many scalars and short strings of a header) are served from a window of this size.
constexpr std::uint64_t kWindowBytes = 64 * 1024;

// ggml's limit on one string, so that a single string field cannot claim gigabytes of memory.
constexpr std::uint64_t kMaxStringBytes = std::uint64_t{1} << 30;

[[noreturn]] void refuse(const std::string& path, const std::string& what, std::optional<std::uint64_t> at_byte) {
    Problems problems;
    problems.add(path, what, at_byte);
    problems.throw_if_any();
    throw InvalidSource({});  // unreachable: throw_if_any threw
}

}  // namespace

HeaderReader::HeaderReader(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) refuse(path_, std::string("cannot open: ") + std::strerror(errno), std::nullopt);
    struct stat info {};
    if (::fstat(fd_, &info) != 0) {
        const int error = errno;
        ::close(fd_);
        refuse(path_, std::string("cannot stat: ") + std::strerror(error), std::nullopt);
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd_);
        refuse(path_, "not a regular file", std::nullopt);
    }
    size_ = static_cast<std::uint64_t>(info.st_size);
}

HeaderReader::~HeaderReader() { ::close(fd_); }

void HeaderReader::fail(const std::string& what, std::uint64_t at_byte) const { refuse(path_, what, at_byte); }

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
        } else if (length >= kWindowBytes) {
            pread_exact(out, length, position_);  // a big string: straight into its destination
            position_ += length;
            length = 0;
        } else {
            window_.resize(std::min(kWindowBytes, remaining()));
            window_start_ = position_;
            pread_exact(window_.data(), window_.size(), window_start_);
        }
    }
}

void HeaderReader::pread_exact(void* dst, std::uint64_t length, std::uint64_t offset) const {
    auto* out = static_cast<char*>(dst);
    while (length > 0) {
        const ssize_t got = ::pread(fd_, out, length, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) fail(std::string("cannot read: ") + std::strerror(errno), offset);
        if (got == 0) fail("file shrank while its header was being read", offset);
        out += got;
        offset += static_cast<std::uint64_t>(got);
        length -= static_cast<std::uint64_t>(got);
    }
}

std::string in_quotes(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out = "'";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7F || c == '\'' || c == '\\') {
            out += "\\x";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xF];
        } else {
            out += c;
        }
    }
    return out + "'";
}

}  // namespace tensorfs::gguf
