// The digests that stores publish for whole files, computed over a file's bytes to check a download against them:
// SHA-256 (the Hub's LFS oid, S3's x-amz-checksum-sha256) and MD5 (S3's ETag of a single-part upload).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tensorfs::remote {

class Sha256 {
public:
    Sha256();
    void update(const void* data, std::size_t length);
    // The digest as 64 lower-case hex digits; the object is spent afterwards.
    std::string hex();

private:
    void block(const std::uint8_t* data);
    std::array<std::uint32_t, 8> state_;
    std::array<std::uint8_t, 64> buffer_{};
    std::size_t buffered_ = 0;
    std::uint64_t length_ = 0;
};

class Md5 {
public:
    Md5();
    void update(const void* data, std::size_t length);
    // The digest as 32 lower-case hex digits; the object is spent afterwards.
    std::string hex();

private:
    void block(const std::uint8_t* data);
    std::array<std::uint32_t, 4> state_;
    std::array<std::uint8_t, 64> buffer_{};
    std::size_t buffered_ = 0;
    std::uint64_t length_ = 0;
};

}  // namespace tensorfs::remote
