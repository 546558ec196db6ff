// The checksums S3 publishes for a whole object, which `prefetch --verify` compares a file's bytes with:
//   - x-amz-checksum-sha256: the base64 SHA-256 of the object's bytes, kept by S3 when the upload sent one (or
//     asked S3 to compute it). S3 returns it on HEAD and GET only to a request that carries
//     `x-amz-checksum-mode: ENABLED`, and not for a byte range. A multipart upload's may be a checksum of the parts'
//     checksums, written with a "-N" suffix (N parts): not the whole object's hash, so it counts as none.
//   - else the ETag, which is the hex MD5 of the bytes for an object uploaded in one part, stored unencrypted or
//     encrypted with S3's own keys (SSE-S3); a multipart upload's has a '-', and an object encrypted with KMS keys
//     (SSE-KMS, DSSE-KMS) or the customer's (SSE-C) has one that is no MD5: none.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "remote_context.hpp"
#include "remote_object.hpp"

namespace tensorfs::remote {

// The hex SHA-256 of an x-amz-checksum-sha256 value; nullopt for a composite one ("...-N") or one that is not
// the base64 of 32 bytes.
std::optional<std::string> sha256_of_s3_checksum(const std::string& value);

// The hex MD5 that a single-part upload's ETag ("<32 hex digits>", quotes included) is, for an object stored with
// `encryption` (x-amz-server-side-encryption: empty, "AES256", "aws:kms"..., or "SSE-C"); nullopt for any other.
std::optional<std::string> md5_of_s3_etag(const std::string& etag, const std::string& encryption);

// The lookup of an S3 object's checksum: a HEAD (same version: If-Match its ETag) asking for
// x-amz-checksum-sha256, else its ETag's MD5.
ChecksumLookup s3_checksum_lookup(std::shared_ptr<RemoteContext> context);

}  // namespace tensorfs::remote
