#include "http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <random>
#include <string_view>
#include <thread>

#include "secrets.hpp"
#include "url.hpp"
#include "xml.hpp"

namespace tensorfs::remote {
namespace {

constexpr int kMaxAttempts = 6;        // the first try and five retries
constexpr int kMaxRedirects = 10;
constexpr auto kFirstBackoff = std::chrono::milliseconds(250);
constexpr auto kLongestBackoff = std::chrono::seconds(8);
constexpr long kLongestRetryAfterSeconds = 30;
constexpr long kConnectTimeoutMilliseconds = 10'000;
// A transfer that moves less than kLowSpeedBytes per second for kLowSpeedSeconds is cut and retried.
constexpr long kLowSpeedBytes = 1024;
constexpr long kLowSpeedSeconds = 20;
constexpr std::size_t kErrorBodyBytes = 4096;  // of an error's body, kept for the message
// libcurl's receive buffer (16 KiB by default): blocks are megabytes, and fewer, larger reads cost less CPU.
constexpr long kReceiveBufferBytes = 512 * 1024;
// Connections kept beyond one per transfer that ran at once (HttpClient::Handles::connections_to_keep).
constexpr std::size_t kSpareConnections = 4;

std::once_flag global_init_once;

bool is_redirect(long status) {
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// 5xx (S3's SlowDown among them), 429, and S3's "RequestTimeout" (400: the connection sat idle too long).
bool is_transient_status(const Response& response) {
    return response.status == 429 || (response.status >= 500 && response.status <= 599) ||
           response.error_code == "SlowDown" || response.error_code == "RequestTimeout";
}

// SHA-256 of an empty payload: what S3 wants in x-amz-content-sha256 for a request without a body.
constexpr const char* kEmptyPayloadSha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// Failures that another try may not meet: the connection broke, timed out or came back empty.
bool is_transient(CURLcode code) {
    switch (code) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_OPERATION_TIMEDOUT:
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_PARTIAL_FILE:
        case CURLE_GOT_NOTHING:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
        case CURLE_SSL_CONNECT_ERROR:
            return true;
        default:
            return false;
    }
}

const char* usual_reason(long status) {
    switch (status) {
        case 200: return "OK";
        case 206: return "Partial Content";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 410: return "Gone";
        case 412: return "Precondition Failed";
        case 416: return "Range Not Satisfiable";
        case 429: return "Too Many Requests";
        case 500: return "Internal Server Error";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        default: return "";
    }
}

std::string trimmed(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' || text.back() == '\n')) {
        text.remove_suffix(1);
    }
    return std::string(text);
}

bool header_is(std::string_view line, std::string_view name) {
    if (line.size() <= name.size() || line[name.size()] != ':') return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(line[i])) != std::tolower(static_cast<unsigned char>(name[i]))) {
            return false;
        }
    }
    return true;
}

// One transfer's state, filled by libcurl's callbacks.
struct Transfer {
    const Request* request;
    Response response;
    std::string location;
    std::string retry_after;
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    auto& transfer = *static_cast<Transfer*>(user);
    if (transfer.request->on_answer) transfer.request->on_answer();
    const std::string_view line(data, size * count);
    Response& response = transfer.response;
    if (line.starts_with("HTTP/")) {
        // A new status line (after an interim 1xx answer): what came before belongs to that one.
        response = Response{};
        transfer.location.clear();
        transfer.retry_after.clear();
        const std::size_t space = line.find(' ');
        if (space != std::string_view::npos) {
            const std::string_view rest = line.substr(space + 1);
            std::from_chars(rest.data(), rest.data() + rest.size(), response.status);
            if (rest.size() > 4) response.reason = trimmed(rest.substr(4));
        }
    } else if (header_is(line, "etag")) {
        response.etag = trimmed(line.substr(5));
    } else if (header_is(line, "last-modified")) {
        response.last_modified = trimmed(line.substr(14));
    } else if (header_is(line, "content-range")) {
        response.content_range = trimmed(line.substr(14));
    } else if (header_is(line, "location")) {
        transfer.location = trimmed(line.substr(9));
    } else if (header_is(line, "retry-after")) {
        transfer.retry_after = trimmed(line.substr(12));
    } else if (header_is(line, "link")) {
        response.link = trimmed(line.substr(5));
    } else if (header_is(line, "x-error-message")) {
        response.error_message = trimmed(line.substr(16));
    } else if (header_is(line, "x-amz-bucket-region")) {
        response.bucket_region = trimmed(line.substr(20));
    } else if (header_is(line, "x-amz-checksum-sha256")) {
        response.checksum_sha256 = trimmed(line.substr(22));
    } else if (header_is(line, "x-amz-server-side-encryption")) {
        response.encryption = trimmed(line.substr(29));
    } else if (header_is(line, "x-amz-server-side-encryption-customer-algorithm")) {
        response.encryption = "SSE-C";
    }
    return size * count;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto& transfer = *static_cast<Transfer*>(user);
    const std::size_t length = size * count;
    Response& response = transfer.response;
    const Request& request = *transfer.request;
    if (request.on_answer) request.on_answer();
    if (!response.ok()) {
        // An error's body: keep its start for the message, drop the rest.
        const std::size_t room = kErrorBodyBytes - std::min(kErrorBodyBytes, response.body.size());
        response.body.append(data, std::min(room, length));
        return length;
    }
    if (length > request.capacity - response.body_bytes) {
        response.overflow = true;
        return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
    }
    if (!request.into.empty()) {
        // Past the buffers already full, then across as many as these bytes fill.
        std::size_t skip = response.body_bytes;
        std::size_t copied = 0;
        for (const std::span<char> buffer : request.into) {
            if (copied == length) break;
            if (skip >= buffer.size()) {
                skip -= buffer.size();
                continue;
            }
            const std::size_t part = std::min(buffer.size() - skip, length - copied);
            std::memcpy(buffer.data() + skip, data + copied, part);
            copied += part;
            skip = 0;
        }
    } else {
        response.body.append(data, length);
    }
    response.body_bytes += length;
    return length;
}

// S3 (and the stores that speak its protocol) say why they refused in an XML body:
// <Error><Code>NoSuchKey</Code><Message>...</Message>...</Error>. Other bodies are left as they are.
void read_error_body(Response& response) {
    const std::size_t start = response.body.find_first_not_of(" \t\r\n");
    if (start == std::string::npos || response.body[start] != '<') return;
    try {
        const XmlElement error = parse_xml(response.body);
        if (error.name != "Error") return;
        response.error_code = error.child_text("Code").value_or("");
        if (response.error_message.empty()) response.error_message = error.child_text("Message").value_or("");
        if (response.bucket_region.empty()) response.bucket_region = error.child_text("Region").value_or("");
    } catch (const XmlError&) {
        // Not S3's error document (or cut at kErrorBodyBytes): the status says it all.
    }
}

// Has libcurl sign the request. libcurl 7.88 signs the path and the query exactly as the URL gives them (callers
// write them in canonical form: s3.cpp) and every header added here, but adds no x-amz-content-sha256, which S3
// wants; given one, it signs the request with that payload hash.
void sign_for_aws(CURL* handle, const AwsSigning& aws, curl_slist*& headers) {
    const std::string provider = "aws:amz:" + aws.region + ":s3";
    curl_easy_setopt(handle, CURLOPT_AWS_SIGV4, provider.c_str());
    curl_easy_setopt(handle, CURLOPT_USERNAME, aws.access_key.c_str());
    curl_easy_setopt(handle, CURLOPT_PASSWORD, aws.secret_key.c_str());
    headers = curl_slist_append(headers, (std::string("x-amz-content-sha256: ") + kEmptyPayloadSha256).c_str());
    if (!aws.session_token.empty()) {
        headers = curl_slist_append(headers, ("x-amz-security-token: " + aws.session_token).c_str());
    }
}

// Retry-After as seconds or an HTTP date; 0 when absent or unreadable.
long retry_after_seconds(const std::string& value) {
    if (value.empty()) return 0;
    long seconds = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (error == std::errc() && end == value.data() + value.size()) return std::max(0L, seconds);
    const time_t when = curl_getdate(value.c_str(), nullptr);
    if (when < 0) return 0;
    return std::max<long>(0, static_cast<long>(when - std::time(nullptr)));
}

// The pause before try `attempt` + 1: exponential, with "equal jitter" (half fixed, half random) so that many
// readers retrying at once spread out; at least what the server asked for with Retry-After (within a bound).
std::chrono::milliseconds backoff(int attempt, long retry_after) {
    thread_local std::minstd_rand random(std::random_device{}());
    const auto exponential = std::min<std::chrono::milliseconds>(kFirstBackoff * (1 << (attempt - 1)), kLongestBackoff);
    std::uniform_int_distribution<long> jitter(0, exponential.count() / 2);
    const auto pause = std::chrono::milliseconds(exponential.count() / 2 + jitter(random));
    return std::max<std::chrono::milliseconds>(pause,
                                               std::chrono::seconds(std::min(retry_after, kLongestRetryAfterSeconds)));
}

std::string describe_failure(CURLcode code, const char* detail) {
    const std::string words = detail[0] != '\0' ? trimmed(detail) : curl_easy_strerror(code);
    switch (code) {
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM:
            return "TLS certificate not accepted (" + words +
                   "); tensorfs always verifies it: name the CA's file in SSL_CERT_FILE or CURL_CA_BUNDLE" +
                   (kubernetes_volume().empty() ? "" : " in the environment of the CSI plugin's container");
        case CURLE_COULDNT_RESOLVE_HOST: return "cannot resolve host (" + words + ")";
        case CURLE_COULDNT_CONNECT: return "cannot connect (" + words + ")";
        case CURLE_OPERATION_TIMEDOUT: return "timed out (" + words + ")";
        default: return words;
    }
}

using Clock = std::chrono::steady_clock;

}  // namespace

ErrorKind kind_of(const Response& response) {
    // S3 answers some refusals of credentials with 400 (an expired session token, a malformed signature).
    static constexpr std::array<std::string_view, 6> kCredentialCodes = {
        "AccessDenied",  "ExpiredToken",          "TokenRefreshRequired",
        "InvalidToken", "InvalidAccessKeyId", "AuthorizationHeaderMalformed"};
    if (std::find(kCredentialCodes.begin(), kCredentialCodes.end(), response.error_code) != kCredentialCodes.end()) {
        return ErrorKind::Permission;
    }
    switch (response.status) {
        case 401:
        case 403: return ErrorKind::Permission;
        case 404:
        case 410: return ErrorKind::NotFound;
        case 408: return ErrorKind::TimedOut;
        case 429: return ErrorKind::Unavailable;
        default: return response.status >= 500 ? ErrorKind::Unavailable : ErrorKind::InvalidSource;
    }
}

namespace {

// S3's refusals of temporary keys that have expired: new ones (renewed) may succeed.
bool is_expired_refusal(const Response& response) {
    return response.error_code == "ExpiredToken" || response.error_code == "TokenRefreshRequired" ||
           response.error_code == "ExpiredTokenException";
}

class FixedCredentials : public CredentialSource {
public:
    explicit FixedCredentials(std::vector<Credentials> credentials) : credentials_(std::move(credentials)) {}
    Current current(Clock::time_point) override { return {credentials_, 0}; }
    std::uint64_t version() const override { return 0; }

private:
    const std::vector<Credentials> credentials_;
};

class SecretCredentials : public CredentialSource {
public:
    explicit SecretCredentials(std::function<std::vector<Credentials>()> make) : make_(std::move(make)) {}

    Current current(Clock::time_point) override {
        const std::uint64_t now = secrets_generation();
        const std::lock_guard lock(mutex_);
        if (!made_ || generation_ != now) {
            credentials_ = make_();
            generation_ = now;
            made_ = true;
        }
        return {credentials_, generation_};
    }
    std::uint64_t version() const override { return secrets_generation(); }

private:
    const std::function<std::vector<Credentials>()> make_;
    std::mutex mutex_;
    bool made_ = false;
    std::uint64_t generation_ = 0;
    std::vector<Credentials> credentials_;
};

// What is left until `deadline`, in whole milliseconds rounded up (libcurl takes 0 as "no limit").
long milliseconds_left(Clock::time_point deadline) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    return static_cast<long>(std::max<std::chrono::milliseconds::rep>(1, left.count()));
}

}  // namespace

std::shared_ptr<CredentialSource> fixed_credentials(std::vector<Credentials> credentials) {
    return std::make_shared<FixedCredentials>(std::move(credentials));
}

std::shared_ptr<CredentialSource> credentials_from_secrets(std::function<std::vector<Credentials>()> make) {
    return std::make_shared<SecretCredentials>(std::move(make));
}

std::string timeout_text(std::chrono::milliseconds timeout) {
    std::string seconds = std::to_string(timeout.count() / 1000);
    if (const auto fraction = timeout.count() % 1000; fraction != 0) {
        char digits[8];
        std::snprintf(digits, sizeof digits, ".%03d", static_cast<int>(fraction));
        seconds += digits;
        while (seconds.back() == '0') seconds.pop_back();
    }
    return seconds + " s (timeout=" + seconds + ")";
}

void init_http() {
    std::call_once(global_init_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string Response::status_text() const {
    std::string text = "HTTP " + std::to_string(status);
    const std::string words = reason.empty() ? usual_reason(status) : reason;
    if (!words.empty()) text += " " + words;
    if (!error_code.empty()) {
        return error_code + (error_message.empty() ? "" : ": " + error_message) + " (" + text + ")";
    }
    if (!error_message.empty()) text += ": " + error_message;
    return text;
}

std::optional<std::uint64_t> Response::total_size() const {
    const std::size_t slash = content_range.rfind('/');
    if (slash == std::string::npos) return std::nullopt;
    std::uint64_t total = 0;
    const char* begin = content_range.data() + slash + 1;
    const char* end = content_range.data() + content_range.size();
    const auto [stop, error] = std::from_chars(begin, end, total);
    if (error != std::errc() || stop != end) return std::nullopt;
    return total;
}

// Idle easy handles (each keeps its connections alive) and one share that lets them reuse each other's
// connections, DNS answers and TLS sessions. Handles are made when first needed, so a daemon makes its own after
// the fork.
struct HttpClient::Handles {
    std::mutex mutex;
    std::vector<CURL*> idle;
    std::size_t made = 0;  // handles made so far: the most transfers that ran at once
    CURLSH* share = nullptr;
    std::array<std::mutex, CURL_LOCK_DATA_LAST> locks;

    Handles() {
        share = curl_share_init();
        curl_share_setopt(share, CURLSHOPT_LOCKFUNC, +[](CURL*, curl_lock_data data, curl_lock_access, void* user) {
            static_cast<Handles*>(user)->locks[data].lock();
        });
        curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, +[](CURL*, curl_lock_data data, void* user) {
            static_cast<Handles*>(user)->locks[data].unlock();
        });
        curl_share_setopt(share, CURLSHOPT_USERDATA, this);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    }
    ~Handles() {
        for (CURL* handle : idle) curl_easy_cleanup(handle);
        curl_share_cleanup(share);
    }

    CURL* take() {
        {
            const std::lock_guard lock(mutex);
            if (!idle.empty()) {
                CURL* handle = idle.back();
                idle.pop_back();
                return handle;
            }
        }
        CURL* handle = curl_easy_init();
        if (handle != nullptr) {
            const std::lock_guard lock(mutex);
            ++made;
        }
        return handle;
    }
    // How many connections the share keeps, in use and idle. A transfer that ends closes the oldest idle connection
    // once the share holds more than this, and libcurl's default is 5: with 16 transfers at once nearly every
    // request would connect again (and, over TLS, shake hands again). One for each transfer that ran at once, and a
    // few for the other hosts of a source (the Hub's API beside its file servers).
    long connections_to_keep() {
        const std::lock_guard lock(mutex);
        return static_cast<long>(made + kSpareConnections);
    }
    void give_back(CURL* handle) {
        const std::lock_guard lock(mutex);
        idle.push_back(handle);
    }
};

HttpClient::HttpClient(RemoteCounters& counters, std::shared_ptr<CredentialSource> credentials,
                       std::chrono::milliseconds timeout, RequestSettings settings)
    : counters_(counters),
      credentials_(std::move(credentials)),
      settings_(std::move(settings)),
      timeout_(timeout),
      handles_(std::make_unique<Handles>()) {
    init_http();
}

HttpClient::~HttpClient() = default;

Response HttpClient::send(const Request& request) {
    const Clock::time_point deadline = request.deadline.value_or(Clock::now() + timeout_);
    std::string url = request.url;
    for (int hop = 0; hop <= kMaxRedirects; ++hop) {
        Response response = send_with_retries(url, request, deadline);
        if (is_redirect(response.status) && !response.location.empty()) {
            url = response.location;
            continue;
        }
        response.url = url;
        return response;
    }
    throw HttpError("more than " + std::to_string(kMaxRedirects) + " redirects");
}

// One hop: the answer of `url` itself, not following a redirect; tried again until `deadline`.
Response HttpClient::send_with_retries(const std::string& url, const Request& request, Clock::time_point deadline) {
    const std::string origin = origin_of(url);
    const std::string gave_up = "; gave up after " + timeout_text(timeout_);
    std::string last_failure;
    bool sent_again = false;  // once, with credentials that changed or were renewed after a refusal
    for (int attempt = 1;; ++attempt) {
        if (Clock::now() >= deadline) {
            throw last_failure.empty() ? HttpError("no answer within " + timeout_text(timeout_), ErrorKind::TimedOut)
                                       : HttpError(last_failure + gave_up);
        }
        // Asked at each try: credentials given or renewed meanwhile go with the next one.
        const CredentialSource::Current used =
            credentials_ ? credentials_->current(deadline) : CredentialSource::Current{};
        CURL* handle = handles_->take();
        if (handle == nullptr) throw HttpError("cannot start a transfer (out of memory)");
        curl_easy_reset(handle);
        Transfer transfer{&request, {}, {}, {}};
        char detail[CURL_ERROR_SIZE] = "";
        curl_slist* headers = nullptr;
        for (const auto& header : settings_.headers) headers = curl_slist_append(headers, header.c_str());
        for (const auto& header : request.headers) headers = curl_slist_append(headers, header.c_str());
        for (const auto& credentials : used.credentials) {
            if (credentials.origin != origin) continue;
            if (credentials.aws) {
                sign_for_aws(handle, *credentials.aws, headers);
            } else {
                headers = curl_slist_append(headers, ("Authorization: " + credentials.authorization).c_str());
            }
        }
        const std::string range = std::to_string(request.first) + "-" + std::to_string(request.last);
        curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
        curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(handle, CURLOPT_SHARE, handles_->share);
        curl_easy_setopt(handle, CURLOPT_MAXCONNECTS, handles_->connections_to_keep());
        curl_easy_setopt(handle, CURLOPT_USERAGENT, "tensorfs/" TENSORFS_VERSION);
        curl_easy_setopt(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
        // A web server's password from ~/.netrc, for its own host only (each redirect hop is a request of its own).
        curl_easy_setopt(handle, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
        curl_easy_setopt(handle, CURLOPT_BUFFERSIZE, kReceiveBufferBytes);
        // The whole transfer ends by the deadline; connecting is given less, so that a host that does not answer
        // leaves time to try again.
        curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, milliseconds_left(deadline));
        curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS,
                         std::min(milliseconds_left(deadline), kConnectTimeoutMilliseconds));
        curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, kLowSpeedBytes);
        curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME, kLowSpeedSeconds);
        // Verification is libcurl's default and stays on; only where the CA certificates are may change.
        if (const char* file = std::getenv("SSL_CERT_FILE"); file != nullptr && *file != '\0') {
            curl_easy_setopt(handle, CURLOPT_CAINFO, file);
        } else if (const char* bundle = std::getenv("CURL_CA_BUNDLE"); bundle != nullptr && *bundle != '\0') {
            curl_easy_setopt(handle, CURLOPT_CAINFO, bundle);
        }
        if (const char* folder = std::getenv("SSL_CERT_DIR"); folder != nullptr && *folder != '\0') {
            curl_easy_setopt(handle, CURLOPT_CAPATH, folder);
        }
        curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
        // Without proxy=, libcurl reads the proxy variables itself; NO_PROXY applies either way. The headers above
        // are the request's own (a plain-HTTP proxy reads them as it forwards it); libcurl never puts them in a
        // CONNECT to the proxy (CURLHEADER_SEPARATE).
        if (!settings_.proxy.empty()) curl_easy_setopt(handle, CURLOPT_PROXY, settings_.proxy.c_str());
        if (request.head) curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
        if (!request.form.empty()) {
            curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request.form.data());
            curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.form.size()));
        }
        if (request.ranged) curl_easy_setopt(handle, CURLOPT_RANGE, range.c_str());
        curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(handle, CURLOPT_HEADERDATA, &transfer);
        curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(handle, CURLOPT_WRITEDATA, &transfer);
        curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, detail);

        const CURLcode code = curl_easy_perform(handle);
        curl_off_t first_byte_us = 0;
        curl_off_t total_us = 0;
        curl_easy_getinfo(handle, CURLINFO_STARTTRANSFER_TIME_T, &first_byte_us);
        curl_easy_getinfo(handle, CURLINFO_TOTAL_TIME_T, &total_us);
        transfer.response.first_byte_us = static_cast<std::uint64_t>(std::max<curl_off_t>(0, first_byte_us));
        transfer.response.total_us = static_cast<std::uint64_t>(std::max<curl_off_t>(0, total_us));
        curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, nullptr);
        curl_easy_setopt(handle, CURLOPT_HTTPHEADER, nullptr);
        curl_slist_free_all(headers);
        handles_->give_back(handle);
        counters_.requests.add(1);
        if (transfer.response.ok()) counters_.bytes_fetched.add(transfer.response.body_bytes);

        Response& response = transfer.response;
        if (response.overflow) return response;  // the caller says what a body longer than asked for means
        if (code == CURLE_OK && !response.ok()) read_error_body(response);
        // Refused with credentials that changed while the request was under way (a republish gave new secrets),
        // or with temporary keys that expired before they were renewed: once more with the current ones.
        const bool refused = response.status == 400 || response.status == 401 || response.status == 403;
        if (code == CURLE_OK && refused && credentials_ && !sent_again) {
            const bool changed = credentials_->version() != used.version;
            if (changed || (is_expired_refusal(response) && credentials_->expired(used.version))) {
                sent_again = true;
                continue;
            }
        }
        const bool transient = code != CURLE_OK ? is_transient(code) : is_transient_status(response);
        const auto pause = backoff(attempt, retry_after_seconds(transfer.retry_after));
        // No time left for another try: the last failure is the answer (a transient status is the caller's to tell).
        const bool out_of_time = Clock::now() + pause >= deadline;
        if (!transient || attempt == kMaxAttempts || out_of_time) {
            if (code == CURLE_OPERATION_TIMEDOUT && out_of_time) {
                // Cut by the deadline: what went wrong before says more than the cut itself.
                throw last_failure.empty()
                    ? HttpError("no answer within " + timeout_text(timeout_), ErrorKind::TimedOut)
                    : HttpError(last_failure + gave_up);
            }
            if (code != CURLE_OK) {
                throw HttpError(describe_failure(code, detail) + (transient && out_of_time ? gave_up : ""),
                                code == CURLE_OPERATION_TIMEDOUT ? ErrorKind::TimedOut : ErrorKind::Unavailable);
            }
            if (is_redirect(response.status) && !transfer.location.empty()) {
                response.location = resolve_url(url, transfer.location);
            }
            return response;
        }
        if (code != CURLE_OK) last_failure = describe_failure(code, detail);
        counters_.retries.add(1);
        std::this_thread::sleep_for(pause);
    }
}

}  // namespace tensorfs::remote
