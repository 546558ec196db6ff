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

std::string Digest::hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context_.get(), digest, &length) != 1) throw std::runtime_error("digest failed");
    constexpr char kHex[] = "0123456789abcdef";
    std::string text;
    for (unsigned int i = 0; i < length; ++i) {
        text += kHex[digest[i] >> 4];
        text += kHex[digest[i] & 15];
    }
    return text;
}

}  // namespace tensorfs::remote
