// Amazon S3 and the object stores that speak its protocol (MinIO, Ceph RGW, Cloudflare R2...):
//
//   s3://BUCKET/KEY       an object: a file, an index (its shards next to it), a part of a GGUF split set
//   s3://BUCKET/PREFIX/   a folder: the keys right under PREFIX/, listed with ListObjectsV2, by the folder rule
//
// A KEY that does not end like a file tensorfs mounts (.safetensors, .gguf, .json...) is a PREFIX too, as with
// hf:// paths. Objects are read by ranged GETs through the remote layer (remote_object.hpp), signed with the
// keys of the AWS settings (aws_config.hpp) or unsigned when there are none. The endpoint is AWS's own in the
// settings' region, with the bucket in the host name (virtual-hosted style), or the one the settings name, with
// the bucket in the path (path style, which every S3-compatible store takes).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aws_config.hpp"
#include "remote_context.hpp"
#include "tensorfs/source_object.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs::remote {

struct S3Address {
    std::string bucket;
    std::string key;   // may be empty (the whole bucket) or end with '/'
};

// Throws SourceError naming `source` when it is not s3://BUCKET[/KEY] with a bucket name S3 allows.
S3Address parse_s3_address(const std::string& source);

// The URLs of one bucket's objects and listings. Paths and queries are written in the canonical form of AWS
// Signature Version 4 (every byte but A-Z a-z 0-9 - . _ ~ percent-encoded, query parameters sorted by name),
// because libcurl signs them as written.
class S3Endpoint {
public:
    // Throws SourceError when the settings' endpoint is not an http(s) URL.
    S3Endpoint(const std::string& bucket, const AwsSettings& settings);

    std::string object_url(const std::string& key) const;
    // One page of ListObjectsV2: the keys under `prefix` up to the next '/' (`recursive`: all of them), from
    // `continuation` on (empty: the first page).
    std::string listing_url(const std::string& prefix, const std::string& continuation, bool recursive = false) const;
    // "scheme://host:port" of every request, which is signed.
    const std::string& origin() const { return origin_; }

private:
    std::string bucket_url_;  // ends with '/': "https://BUCKET.s3.REGION.amazonaws.com/", "http://host:9000/BUCKET/"
    bool path_style_ = false;
    std::string origin_;
};

// What one page of a ListObjectsV2 answer says.
struct S3ListingPage {
    std::vector<std::string> keys;
    std::string next_continuation;  // empty: the last page
};

// Reads a ListObjectsV2 answer. Throws std::runtime_error saying what is wrong when it is not one.
S3ListingPage read_listing_page(const std::string& body);

// A folder of a bucket: the keys that start with `prefix` ("" or ending with '/').
class S3Folder : public SourceFolder {
public:
    S3Folder(std::shared_ptr<RemoteContext> context, S3Endpoint endpoint, S3Address address);

    std::string name() const override;
    std::string name_of(const std::string& relative) const override;
    std::shared_ptr<const SourceObject> open_if_exists(const std::string& relative) const override;
    std::vector<std::string> list() const override;
    std::vector<std::string> list_all() const override;
    unsigned parallel_reads() const override;
    std::string missing(const std::string& relative) const override;

private:
    // The keys under this folder's prefix, relative to it (`recursive`: in its subfolders too), page after page.
    std::vector<std::string> keys(bool recursive) const;

    std::shared_ptr<RemoteContext> context_;
    S3Endpoint endpoint_;
    std::string bucket_;
    std::string prefix_;
};

// The folder and file that an s3:// SOURCE names, with the AWS settings of this process's environment.
SourceLocation resolve_s3(const std::string& source, const SourceOptions& options);

}  // namespace tensorfs::remote
