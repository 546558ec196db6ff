#include "s3_checksum.hpp"

#include "digest.hpp"
#include "tensorfs/errors.hpp"
#include "url.hpp"

namespace tensorfs::remote {

std::optional<std::string> sha256_of_s3_checksum(const std::string& value) { return hex_of_base64(value, 32); }

std::optional<std::string> md5_of_s3_etag(const std::string& etag, const std::string& encryption) {
    if (!encryption.empty() && encryption != "AES256") return std::nullopt;
    const bool md5 = etag.size() == 34 && etag.front() == '"' && etag.back() == '"' &&
                     etag.find_first_not_of("0123456789abcdef", 1) == etag.size() - 1;
    if (!md5) return std::nullopt;
    return etag.substr(1, 32);
}

ChecksumLookup s3_checksum_lookup(std::shared_ptr<RemoteContext> context) {
    return [context = std::move(context)](const RemoteObject& object) -> std::optional<PublishedChecksum> {
        Request request;
        request.url = object.url();
        request.head = true;
        request.headers.push_back("x-amz-checksum-mode: ENABLED");
        if (!object.etag().empty()) request.headers.push_back("If-Match: " + object.etag());
        Response response;
        try {
            response = context->http().send(request);
        } catch (const HttpError& error) {
            throw IoError(object.name(), error.what(), error.kind());
        }
        if (response.status == 412) throw IoError(object.name(), "it changed since it was opened (HTTP 412)");
        if (!response.ok()) {
            throw IoError(object.name(), "asking for its checksum: " + context->refusal(response), kind_of(response));
        }
        if (const auto sha256 = sha256_of_s3_checksum(response.checksum_sha256)) {
            return PublishedChecksum{Digest::Kind::Sha256, *sha256, "x-amz-checksum-sha256"};
        }
        if (const auto md5 = md5_of_s3_etag(object.etag(), response.encryption)) {
            return PublishedChecksum{Digest::Kind::Md5, *md5, "the ETag's MD5"};
        }
        return std::nullopt;
    };
}

}  // namespace tensorfs::remote
