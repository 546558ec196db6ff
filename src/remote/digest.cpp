#include "digest.hpp"

#include <openssl/evp.h>

#include <new>
#include <stdexcept>

namespace tensorfs::remote {

void Digest::Free::operator()(evp_md_ctx_st* context) const { EVP_MD_CTX_free(context); }

Digest::Digest(Kind kind) : context_(EVP_MD_CTX_new()) {
    if (!context_) throw std::bad_alloc();
    const EVP_MD* algorithm = kind == Kind::Sha256 ? EVP_sha256() : EVP_md5();
    if (EVP_DigestInit_ex(context_.get(), algorithm, nullptr) != 1) throw std::runtime_error("digest unavailable");
}

void Digest::update(const void* data, std::size_t length) {
    if (EVP_DigestUpdate(context_.get(), data, length) != 1) throw std::runtime_error("digest update failed");
}

namespace {

std::string hex_of(const unsigned char* bytes, std::size_t length) {
    constexpr char kHex[] = "0123456789abcdef";
    std::string text;
    for (std::size_t i = 0; i < length; ++i) {
        text += kHex[bytes[i] >> 4];
        text += kHex[bytes[i] & 15];
    }
    return text;
}

}  // namespace

std::string Digest::hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context_.get(), digest, &length) != 1) throw std::runtime_error("digest failed");
    return hex_of(digest, length);
}

std::optional<std::string> hex_of_base64(std::string_view text, std::size_t bytes) {
    // Padded base64 is 4 characters per 3 bytes; EVP_DecodeBlock decodes the padding as zero bytes.
    const std::size_t padded = (bytes + 2) / 3 * 3;
    if (text.size() != padded / 3 * 4 || bytes == 0) return std::nullopt;
    const std::size_t padding = padded - bytes;
    if (text.find('=') != (padding == 0 ? std::string_view::npos : text.size() - padding)) return std::nullopt;
    std::string decoded(padded, '\0');
    auto* out = reinterpret_cast<unsigned char*>(decoded.data());
    if (EVP_DecodeBlock(out, reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size())) !=
        static_cast<int>(padded)) {
        return std::nullopt;
    }
    return hex_of(out, bytes);
}

}  // namespace tensorfs::remote
