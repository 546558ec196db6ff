#include "s3.hpp"

#include <algorithm>
#include <stdexcept>

#include "aws_credentials.hpp"
#include "remote_object.hpp"
#include "s3_checksum.hpp"
#include "secrets.hpp"
#include "tensorfs/errors.hpp"
#include "url.hpp"
#include "url_folder.hpp"
#include "xml.hpp"

namespace tensorfs::remote {
namespace {

constexpr std::string_view kS3Scheme = "s3://";
// A page holds at most 1,000 keys of at most 1 KiB each.
constexpr std::size_t kMaxS3ListingBytes = std::size_t{16} << 20;
constexpr int kMaxS3ListingPages = 10'000;

bool is_bucket_character(unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_'; }

// Names that can be a host name's first label: AWS's rules for buckets created today.
bool fits_in_a_host_name(const std::string& bucket) {
    return bucket.size() >= 3 && bucket.size() <= 63 && std::isalnum(static_cast<unsigned char>(bucket.front())) &&
           std::all_of(bucket.begin(), bucket.end(), [](unsigned char c) {
               return std::islower(c) || std::isdigit(c) || c == '-';
           });
}

// AWS's partition of a region: China's regions have a domain of their own.
std::string aws_domain(const std::string& region) {
    return region.starts_with("cn-") ? "amazonaws.com.cn" : "amazonaws.com";
}

// What to do about a refusal, from what is not secret about the credentials in use (asked at each refusal: they
// change when new secrets are given or temporary keys are renewed).
struct Advice {
    std::string bucket;
    std::string region;
    std::shared_ptr<AwsCredentialSource> credentials;

    // What a user can do about `response`, by S3's error code; empty when there is nothing to say.
    std::string about(const Response& response) const {
        const std::string& code = response.error_code;
        const bool kubernetes = !kubernetes_volume().empty();
        if (!response.bucket_region.empty() && response.bucket_region != region) {
            return "the bucket is in region " + response.bucket_region + ", not " + region + ": set AWS_REGION=" +
                   response.bucket_region + (kubernetes ? " in the environment of the CSI plugin's container" : "");
        }
        if (code == "NoSuchBucket") return "there is no bucket '" + bucket + "' at this endpoint";
        if (code == "RequestTimeTooSkewed") {
            return "this machine's clock is more than 15 minutes off the store's: set it right (NTP)";
        }
        const AwsCredentialSource::Description used = credentials->describe();
        if (!used.signs && (response.status == 401 || response.status == 403)) {
            std::string text =
                kubernetes ? "the volume has no AWS credentials, so the request went unsigned, which only a public "
                             "bucket allows: put AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in a Secret and name it "
                             "in the volume's nodePublishSecretRef, or give the volume the attribute aws_role_arn "
                             "(web identity with the pod's service account)"
                           : "no AWS credentials were found (AWS_ACCESS_KEY_ID, AWS_PROFILE, ~/.aws/credentials, "
                             "AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE), so the request went unsigned, which "
                             "only a public bucket allows";
            if (!used.incomplete_source.empty()) {
                text += "; " + used.incomplete_source;
            } else if (!used.unsupported_source.empty()) {
                text += "; " + used.unsupported_source + ", which tensorfs does not use";
                if (!kubernetes) {
                    text += ": export the keys, e.g. with eval \"$(aws configure export-credentials --format env)\"";
                }
            }
            return text;
        }
        // Keys from a volume's Secret are changed by changing the Secret: kubelet's next publish (within a minute,
        // requiresRepublish) gives them to the running volume.
        const bool from_secret = kubernetes && used.found_in == given_secrets_place();
        const std::string update = from_secret ? ": update the Secret (kubelet gives the running volume its new keys "
                                                 "within a minute)"
                                               : "";
        const std::string keys = "access key " + used.access_key + " from " + used.found_in;
        if (code == "SignatureDoesNotMatch") {
            return "the secret key from " + used.found_in + " is not the one of access key " + used.access_key + update;
        }
        if (code == "InvalidAccessKeyId") return "the store does not know " + keys + update;
        if (code == "InvalidToken" || code == "ExpiredToken" || code == "TokenRefreshRequired") {
            if (!used.role_arn.empty()) return "the temporary keys of " + used.found_in + " were refused as expired";
            return "the session token from " + used.found_in + " is not valid (any more)" +
                   (from_secret ? ": put new keys in the Secret, or use web identity (the volume attribute "
                                  "aws_role_arn), whose keys tensorfs renews"
                                : ": get new credentials");
        }
        if (code == "AccessDenied" || response.status == 403) {
            return keys + " may not read it" +
                   (kubernetes ? ": its IAM policy must allow s3:GetObject and s3:ListBucket on the bucket" : "");
        }
        return {};
    }
};

}  // namespace

S3Address parse_s3_address(const std::string& source) {
    const std::string rest = source.substr(kS3Scheme.size());
    const std::size_t slash = rest.find('/');
    S3Address address{rest.substr(0, slash), slash == std::string::npos ? "" : rest.substr(slash + 1)};
    const auto bad = [&](const std::string& why) {
        throw_problem(source, why + "; expected s3://BUCKET/KEY or s3://BUCKET/PREFIX/");
    };
    if (address.bucket.empty()) bad("no bucket named");
    if (address.bucket.size() > 255 || !std::all_of(address.bucket.begin(), address.bucket.end(),
                                                    [](unsigned char c) { return is_bucket_character(c); })) {
        bad("'" + address.bucket + "' is not a bucket name (letters, digits, '-', '.', '_')");
    }
    for (std::size_t start = 0; start <= address.key.size();) {
        std::size_t end = address.key.find('/', start);
        if (end == std::string::npos) end = address.key.size();
        const std::string_view segment = std::string_view(address.key).substr(start, end - start);
        if (segment == "." || segment == "..") bad("a key with '.' or '..' between slashes");
        start = end + 1;
    }
    return address;
}

S3Endpoint::S3Endpoint(const std::string& bucket, const AwsSettings& settings) {
    if (settings.endpoint.empty()) {
        const std::string domain = aws_domain(settings.region);
        if (fits_in_a_host_name(bucket)) {
            bucket_url_ = "https://" + bucket + ".s3." + settings.region + "." + domain + "/";
        } else {
            // Dots would not match the wildcard certificate of a virtual host: the bucket goes in the path.
            bucket_url_ = "https://s3." + settings.region + "." + domain + "/" + percent_encode(bucket) + "/";
            path_style_ = true;
        }
    } else {
        std::string endpoint = settings.endpoint;
        while (endpoint.ends_with('/')) endpoint.pop_back();
        if (!(endpoint.starts_with("http://") || endpoint.starts_with("https://")) || origin_of(endpoint).empty()) {
            throw_problem(endpoint,
                          "is not an http:// or https:// URL for an S3 endpoint (AWS_ENDPOINT_URL_S3, "
                          "AWS_ENDPOINT_URL or endpoint_url)");
        }
        bucket_url_ = endpoint + "/" + percent_encode(bucket) + "/";
        path_style_ = true;
    }
    origin_ = origin_of(bucket_url_);
}

std::string S3Endpoint::object_url(const std::string& key) const { return bucket_url_ + percent_encode(key, "/"); }

std::string S3Endpoint::listing_url(const std::string& prefix, const std::string& continuation,
                                    bool recursive) const {
    // Path style lists "/BUCKET", as AWS's SDKs do; a virtual host lists "/".
    std::string url = path_style_ ? bucket_url_.substr(0, bucket_url_.size() - 1) : bucket_url_;
    url += "?";
    if (!continuation.empty()) url += "continuation-token=" + percent_encode(continuation) + "&";
    if (!recursive) url += "delimiter=%2F&";
    url += "list-type=2&prefix=" + percent_encode(prefix);
    return url;
}

S3ListingPage read_listing_page(const std::string& body) {
    XmlElement root;
    try {
        root = parse_xml(body);
    } catch (const XmlError& error) {
        throw std::runtime_error(std::string(error.what()) + " at byte " + std::to_string(error.at()));
    }
    if (root.name != "ListBucketResult") throw std::runtime_error("its root element is <" + root.name + ">");
    S3ListingPage page;
    for (const auto& entry : root.children) {
        if (entry.name != "Contents") continue;
        auto key = entry.child_text("Key");
        if (!key) throw std::runtime_error("an entry of <Contents> has no <Key>");
        page.keys.push_back(std::move(*key));
    }
    if (root.child_text("IsTruncated").value_or("false") == "true") {
        page.next_continuation = root.child_text("NextContinuationToken").value_or("");
        if (page.next_continuation.empty()) {
            throw std::runtime_error("a truncated page without <NextContinuationToken>");
        }
    }
    return page;
}

S3Folder::S3Folder(std::shared_ptr<RemoteContext> context, S3Endpoint endpoint, S3Address address)
    : context_(std::move(context)),
      endpoint_(std::move(endpoint)),
      bucket_(std::move(address.bucket)),
      prefix_(std::move(address.key)) {}

std::string S3Folder::name() const { return std::string(kS3Scheme) + bucket_ + "/" + prefix_; }

std::string S3Folder::name_of(const std::string& relative) const { return name() + relative; }

std::shared_ptr<const SourceObject> S3Folder::open_if_exists(const std::string& relative) const {
    auto object = RemoteObject::open(context_, name_of(relative), endpoint_.object_url(prefix_ + relative));
    if (object) object->set_checksum_lookup(s3_checksum_lookup(context_));
    return object;
}

std::vector<std::string> S3Folder::list() const { return keys(false); }

std::vector<std::string> S3Folder::list_all() const { return keys(true); }

std::vector<std::string> S3Folder::keys(bool recursive) const {
    std::vector<std::string> names;
    std::string continuation;
    for (int page = 0;; ++page) {
        if (page == kMaxS3ListingPages) {
            throw_problem(name(), "the listing has more than " + std::to_string(page) + " pages");
        }
        Request request;
        request.url = endpoint_.listing_url(prefix_, continuation, recursive);
        request.capacity = kMaxS3ListingBytes;
        Response response;
        try {
            response = context_->http().send(request);
        } catch (const HttpError& error) {
            throw_source_error(error.kind(), name(),
                               std::string(error.what()) + " (listing at " + endpoint_.origin() + ")");
        }
        if (response.overflow) throw_problem(name(), "a page of the listing is larger than 16 MiB");
        if (!response.ok()) throw_source_error(kind_of(response), name(), context_->refusal(response));
        S3ListingPage listed;
        try {
            listed = read_listing_page(response.body);
        } catch (const std::runtime_error& error) {
            throw_problem(name(), std::string("the store's answer is not a ListObjectsV2 listing: ") + error.what());
        }
        for (const auto& key : listed.keys) {
            // The keys right in this folder, as a local folder's listing gives its files (not "PREFIX/" itself,
            // nor any "PREFIX/SUB/", which some tools create to show a folder).
            if (!key.starts_with(prefix_) || key.size() == prefix_.size() || key.ends_with('/')) continue;
            if (!recursive && key.find('/', prefix_.size()) != std::string::npos) continue;
            names.push_back(key.substr(prefix_.size()));
        }
        if (listed.next_continuation.empty()) break;
        if (listed.next_continuation == continuation) throw_problem(name(), "the store repeats its continuation token");
        continuation = std::move(listed.next_continuation);
    }
    std::sort(names.begin(), names.end());
    return names;
}

unsigned S3Folder::parallel_reads() const { return kRemoteParallelReads; }

std::string S3Folder::missing(const std::string&) const { return "NoSuchKey: no object has this key (HTTP 404)"; }

SourceLocation resolve_s3(const std::string& source, const SourceOptions& options) {
    S3Address address = parse_s3_address(source);
    const AwsSettings settings = read_aws_settings();
    S3Endpoint endpoint(address.bucket, settings);

    // Kept current: read again when new secrets are given, temporary keys renewed (aws_credentials.hpp).
    auto credentials = std::make_shared<AwsCredentialSource>(endpoint.origin(), settings, options);
    Advice advice{address.bucket, settings.region, credentials};
    const std::string origin = endpoint.origin();
    auto explain = [advice, origin](const Response& response) {
        const std::string what = advice.about(response);
        return response.status_text() + " from " + origin + (what.empty() ? "" : "; " + what);
    };
    auto context = std::make_shared<RemoteContext>(options, std::move(credentials), std::move(explain));

    // A key that names a file is opened in the folder of its last '/'; anything else is a prefix.
    std::string file;
    if (names_a_file(address.key)) {
        const std::size_t slash = address.key.rfind('/');
        file = address.key.substr(slash == std::string::npos ? 0 : slash + 1);
        address.key.resize(slash == std::string::npos ? 0 : slash + 1);
    } else if (!address.key.empty() && !address.key.ends_with('/')) {
        address.key += '/';
    }
    return {std::make_unique<S3Folder>(std::move(context), std::move(endpoint), std::move(address)), std::move(file)};
}

}  // namespace tensorfs::remote
