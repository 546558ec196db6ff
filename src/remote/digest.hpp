// The digests that stores publish for whole files, computed over a file's bytes to check a download against them:
// SHA-256 (the Hub's LFS oid, S3's x-amz-checksum-sha256) and MD5 (S3's ETag of a single-part upload). Computed by
// OpenSSL's libcrypto, the library libcurl's TLS already loads.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace tensorfs::remote {

class Digest {
public:
    enum class Kind { Sha256, Md5 };

    explicit Digest(Kind kind);
    void update(const void* data, std::size_t length);
    // The digest as lower-case hex digits; the object is spent afterwards.
    std::string hex();

private:
    struct Free {
        void operator()(evp_md_ctx_st* context) const;
    };
    std::unique_ptr<evp_md_ctx_st, Free> context_;
};

// The lower-case hex digits of a digest that a store publishes in base64 (S3's x-amz-checksum-*), when `text` is
// the padded base64 of exactly `bytes` bytes; nullopt otherwise.
std::optional<std::string> hex_of_base64(std::string_view text, std::size_t bytes);

}  // namespace tensorfs::remote
