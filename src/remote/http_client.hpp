// Every HTTP request of the remote layer goes through HttpClient, on libcurl: connections reused across requests
// and threads, TLS always verified, redirects followed here (so that credentials go to their own origin only),
// connection errors, 5xx and 429 retried a bounded number of times with exponential backoff and jitter, and the
// whole of it, retries and pauses included, bounded by a deadline (timeout=).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <span>
#include <string>
#include <vector>

#include "tensorfs/errors.hpp"
#include "tensorfs/stats.hpp"

namespace tensorfs::remote {

// Long-term or temporary AWS credentials, with which libcurl signs each request (AWS Signature Version 4, for
// the S3 service in `region`).
struct AwsSigning {
    std::string region;
    std::string access_key;
    std::string secret_key;
    std::string session_token;  // temporary credentials only; sent (signed) as x-amz-security-token
};

// What requests to one origin ("https://host:443") carry to prove who sends them, and to that origin only, never
// to one it redirects to: an Authorization header (the Hub's bearer token), or an AWS signature.
struct Credentials {
    std::string origin;
    std::string authorization;        // the header's value, e.g. "Bearer hf_..."; empty when `aws` signs instead
    std::optional<AwsSigning> aws;
};

// Where a client's credentials come from. They may change while the client runs (new secrets given to a running
// daemon: secrets.hpp; temporary AWS keys renewed before they expire: aws_credentials.hpp): the client asks before
// every request, from any of its threads.
class CredentialSource {
public:
    struct Current {
        std::vector<Credentials> credentials;
        std::uint64_t version = 0;  // moves whenever the credentials change
    };
    virtual ~CredentialSource() = default;
    // The credentials to send now. May renew them first (ask AWS STS for new temporary keys), within `deadline`;
    // throws CredentialsError when there are none to be had.
    virtual Current current(std::chrono::steady_clock::time_point deadline) = 0;
    // The version current() would give now, without renewing anything.
    virtual std::uint64_t version() const = 0;
    // A request sent with version `used` was refused as expired (S3's ExpiredToken): returns whether other
    // credentials can be had (the next current() renews them), false when these cannot be renewed.
    virtual bool expired(std::uint64_t used) {
        static_cast<void>(used);
        return false;
    }
};

// Credentials that never change.
std::shared_ptr<CredentialSource> fixed_credentials(std::vector<Credentials> credentials);

// Credentials that `make` makes from the given secrets and the environment (secrets.hpp), made again whenever the
// given secrets change.
std::shared_ptr<CredentialSource> credentials_from_secrets(std::function<std::vector<Credentials>()> make);

// What every request of a client goes through and carries, whoever it is for (SourceOptions' proxy and headers).
struct RequestSettings {
    std::string proxy;                 // empty: libcurl's variables (http_proxy, HTTPS_PROXY, ALL_PROXY, NO_PROXY)
    std::vector<std::string> headers;  // "NAME: VALUE"
};

struct Request {
    std::string url;
    bool head = false;                   // HEAD: the answer's headers only
    std::string form;                    // a POST of this application/x-www-form-urlencoded body (AWS STS); empty: GET
    bool ranged = false;                 // ask for bytes [first, last] only
    std::uint64_t first = 0;
    std::uint64_t last = 0;
    std::vector<std::string> headers;    // more headers, e.g. "If-Match: \"abc\""
    // Where the body of a successful (2xx) answer goes: the buffers of `into`, filled one after the other (at most
    // `capacity` bytes; more aborts the transfer and sets Response::overflow), or Response::body when `into` is
    // empty (at most `capacity` bytes too).
    std::vector<std::span<char>> into;
    std::size_t capacity = 0;
    // When to give up, retries included: a reader's whole wait is bounded (timeout=). Unset: the client's timeout
    // from now.
    std::optional<std::chrono::steady_clock::time_point> deadline;
    // Called, on the sending thread, whenever the server sends something (a header line, a part of the body): it is
    // there, however slowly the body comes.
    std::function<void()> on_answer;
};

struct Response {
    long status = 0;
    std::string reason;          // the server's words for the status ("Not Found"), or the usual ones
    std::string url;             // the URL that gave this answer, after redirects
    std::string location;        // of a redirect, resolved against its URL (HttpClient::send follows it)
    std::string etag;
    std::string last_modified;
    std::string content_range;   // e.g. "bytes 0-99/1234"
    std::string link;            // Link header (pagination)
    std::string error_message;   // why it refused: X-Error-Message (the Hub), or <Message> of an S3 error body
    std::string error_code;      // <Code> of an S3 error body ("NoSuchKey", "AccessDenied"...)
    std::string bucket_region;   // where S3 says the bucket is (x-amz-bucket-region, or <Region> of its error)
    std::string checksum_sha256; // S3's x-amz-checksum-sha256 (base64), sent when asked with x-amz-checksum-mode
    std::string encryption;      // S3's x-amz-server-side-encryption ("AES256", "aws:kms"...), or "SSE-C"
    std::uint64_t body_bytes = 0;
    // From the transfer's start (on a new connection that includes connecting and TLS) to the answer's first byte,
    // and to its last.
    std::uint64_t first_byte_us = 0;
    std::uint64_t total_us = 0;
    bool overflow = false;       // the body was longer than the room given, so the transfer was cut
    std::string body;            // the body when no buffer was given; the start of an error's body otherwise

    bool ok() const { return status >= 200 && status < 300; }
    // "HTTP 404 Not Found" (and the server's own message when it gave one), or with an S3 error code
    // "NoSuchKey: The specified key does not exist. (HTTP 404 Not Found)".
    std::string status_text() const;
    // The total size from Content-Range ("bytes a-b/N" or "bytes */N"), if any.
    std::optional<std::uint64_t> total_size() const;
};

// No answer at all after the retries, or none before the deadline: the server cannot be reached, the TLS handshake
// failed, the connection kept breaking or hung. what() is one line for a user (without the URL: the caller names
// the file).
class HttpError : public std::runtime_error {
public:
    explicit HttpError(const std::string& what, ErrorKind kind = ErrorKind::Unavailable)
        : std::runtime_error(what), kind_(kind) {}
    // Unavailable, TimedOut when it was no answer at all before the deadline, Permission for CredentialsError.
    ErrorKind kind() const noexcept { return kind_; }

private:
    ErrorKind kind_;
};

// No credentials could be had for a request (AWS STS refused the web identity token, or could not be reached):
// nothing was sent to the server. what() says why and what to do.
class CredentialsError : public HttpError {
public:
    explicit CredentialsError(const std::string& what) : HttpError(what, ErrorKind::Permission) {}
};

// What a refusal by the server means for a front end: 401 and 403 (and S3's refusals of credentials sent with 400)
// Permission, 404 and 410 NotFound, 5xx and 429 Unavailable, 408 TimedOut, anything else InvalidSource (the server
// says the request or the source is wrong).
ErrorKind kind_of(const Response& response);

class HttpClient {
public:
    // `timeout`: the deadline of a request that sets none, from when it is sent. `credentials`: none when null.
    HttpClient(RemoteCounters& counters, std::shared_ptr<CredentialSource> credentials,
               std::chrono::milliseconds timeout, RequestSettings settings = {});
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // Sends `request` and returns the final answer, whatever its status (404, 412: the caller knows what they
    // mean); redirects are followed and transient failures retried first, until the request's deadline. Throws
    // HttpError when no answer came by then (CredentialsError when no credentials could be had for it). A request
    // refused because its credentials changed while it was under way, or because temporary keys expired, is sent
    // again once with the new ones.
    Response send(const Request& request);

    RemoteCounters& counters() const { return counters_; }
    std::chrono::milliseconds timeout() const { return timeout_; }

private:
    struct Handles;
    Response send_with_retries(const std::string& url, const Request& request,
                               std::chrono::steady_clock::time_point deadline);

    RemoteCounters& counters_;
    std::shared_ptr<CredentialSource> credentials_;
    RequestSettings settings_;
    const std::chrono::milliseconds timeout_;
    std::unique_ptr<Handles> handles_;
};

// "3 s (timeout=3)", "2.5 s (timeout=2.5)": how messages name a timeout.
std::string timeout_text(std::chrono::milliseconds timeout);

// libcurl's global state, set up once; main() calls it before any thread starts (later calls do nothing).
void init_http();

}  // namespace tensorfs::remote
