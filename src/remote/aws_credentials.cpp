#include "aws_credentials.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>

#include "log.hpp"
#include "secrets.hpp"
#include "tensorfs/errors.hpp"
#include "trim_space.hpp"
#include "url.hpp"
#include "xml.hpp"

namespace tensorfs::remote {
namespace {

using SystemClock = std::chrono::system_clock;

// Keys are not used in their last second: a request signed then may reach the store after they expired.
constexpr auto kExpiryMargin = std::chrono::seconds(1);
// Renewal ahead of expiry, as AWS's SDKs renew (the Java SDK's prefetch time).
constexpr auto kRenewAhead = std::chrono::minutes(5);
// After a failed renewal while the keys still hold: the longest pause before the next try.
constexpr auto kLongestRetryPause = std::chrono::seconds(30);
// After a failed renewal with no keys that hold: requests fail with its message, without asking STS again, for this
// long (the kernel asks again for a page right after its read failed).
constexpr auto kFailureKept = std::chrono::seconds(1);
constexpr std::size_t kMaxTokenBytes = 64 * 1024;
constexpr std::size_t kMaxStsAnswerBytes = 64 * 1024;

std::string utc_text(SystemClock::time_point when) {
    const time_t seconds = SystemClock::to_time_t(when);
    tm parts{};
    ::gmtime_r(&seconds, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return text;
}

// The token of `identity`: the one given, else its file's contents (read at each renewal: kubelet and EKS write a
// new one before the old expires).
std::string read_token(const AwsWebIdentity& identity) {
    if (!identity.token.empty()) return identity.token;
    std::ifstream in(identity.token_file, std::ios::binary);
    if (!in) {
        throw CredentialsError("cannot read the web identity token file " + identity.token_file + " (" +
                               std::strerror(errno) + ")");
    }
    std::string text(kMaxTokenBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxTokenBytes) {
        throw CredentialsError("the web identity token file " + identity.token_file + " is larger than 64 KiB");
    }
    std::string token(trim_space(text));
    if (token.empty()) throw CredentialsError("the web identity token file " + identity.token_file + " is empty");
    return token;
}

// What to do about STS's refusal `code`, in the terms of where the token and the role come from.
std::string sts_advice(const std::string& code, const AwsWebIdentity& identity) {
    const bool kubernetes = !kubernetes_volume().empty() && !identity.token.empty();
    if (code == "InvalidIdentityToken" || code == "IDPRejectedClaim" || code == "AccessDenied") {
        return kubernetes ? "the trust policy of role " + identity.role_arn +
                                " must accept the cluster's OIDC issuer, the audience sts.amazonaws.com (the "
                                "CSIDriver's tokenRequests) and the pod's service account "
                                "(system:serviceaccount:NAMESPACE:NAME)"
                          : "the trust policy of role " + identity.role_arn +
                                " must accept the token's issuer, audience and subject";
    }
    if (code == "ExpiredTokenException") {
        return kubernetes ? "the pod's service account token has expired: kubelet gives a new one when it publishes "
                            "the volume again (requiresRepublish), about once a minute"
                          : "the token in " + identity.token_file + " has expired: whoever writes it must renew it";
    }
    return {};
}

}  // namespace

std::optional<SystemClock::time_point> parse_iso8601(const std::string& text) {
    tm parts{};
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, used = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute, &second, &used) !=
            6 ||
        used != 19) {
        return std::nullopt;
    }
    std::string_view rest = std::string_view(text).substr(19);
    if (rest.starts_with('.')) {
        rest.remove_prefix(1);
        while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') rest.remove_prefix(1);
    }
    if (rest != "Z" && rest != "+00:00") return std::nullopt;
    if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return std::nullopt;
    parts.tm_year = year - 1900;
    parts.tm_mon = month - 1;
    parts.tm_mday = day;
    parts.tm_hour = hour;
    parts.tm_min = minute;
    parts.tm_sec = second;
    return SystemClock::from_time_t(::timegm(&parts));
}

TemporaryKeys read_sts_answer(const std::string& body) {
    XmlElement root;
    try {
        root = parse_xml(body);
    } catch (const XmlError& error) {
        throw std::runtime_error(std::string(error.what()) + " at byte " + std::to_string(error.at()));
    }
    if (root.name != "AssumeRoleWithWebIdentityResponse") {
        throw std::runtime_error("its root element is <" + root.name + ">");
    }
    const XmlElement* result = root.child("AssumeRoleWithWebIdentityResult");
    const XmlElement* credentials = result ? result->child("Credentials") : nullptr;
    if (credentials == nullptr) throw std::runtime_error("it has no <Credentials>");
    TemporaryKeys temporary;
    temporary.keys.access_key = credentials->child_text("AccessKeyId").value_or("");
    temporary.keys.secret_key = credentials->child_text("SecretAccessKey").value_or("");
    temporary.keys.session_token = credentials->child_text("SessionToken").value_or("");
    if (temporary.keys.access_key.empty() || temporary.keys.secret_key.empty() ||
        temporary.keys.session_token.empty()) {
        throw std::runtime_error("its <Credentials> lack a key, the secret or the session token");
    }
    for (const std::string* value : {&temporary.keys.access_key, &temporary.keys.secret_key,
                                     &temporary.keys.session_token}) {
        if (std::any_of(value->begin(), value->end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
            throw std::runtime_error("its <Credentials> hold control characters");
        }
    }
    const std::string expiration = credentials->child_text("Expiration").value_or("");
    const auto when = parse_iso8601(expiration);
    if (!when) throw std::runtime_error("its <Expiration> '" + expiration + "' is not a time");
    temporary.expiration = *when;
    return temporary;
}

SystemClock::time_point renewal_time(SystemClock::time_point obtained, SystemClock::time_point expiration) {
    const auto life = expiration - obtained;
    return expiration - std::min<SystemClock::duration>(kRenewAhead, life / 2);
}

std::string session_name_of(const std::string& wanted) {
    std::string name = wanted.substr(0, 64);
    for (char& c : name) {
        const bool allowed = std::isalnum(static_cast<unsigned char>(c)) || std::strchr("+=,.@_-", c) != nullptr;
        if (!allowed || c == '\0') c = '_';
    }
    while (name.size() < 2) name += '_';
    return name;
}

AwsCredentialSource::AwsCredentialSource(std::string origin, AwsSettings settings, const SourceOptions& options)
    : origin_(std::move(origin)),
      sts_(sts_counters_, nullptr, options.timeout, RequestSettings{options.proxy, options.headers}),
      settings_(std::move(settings)),
      generation_(secrets_generation()) {}

void AwsCredentialSource::follow_secrets() {
    const std::uint64_t now = secrets_generation();
    if (now == generation_) return;
    generation_ = now;
    AwsSettings settings;
    try {
        settings = read_aws_settings();
    } catch (const SourceError& invalid) {
        settings.region = settings_.region;
        const auto& problems = invalid.problems();
        settings.incomplete_source = problems.empty() ? invalid.what() : problems.front().line();
    }
    // A new token for the same role (kubelet renews the pod's token) is for the next renewal: the keys it got
    // hold until then.
    const auto& before = settings_.web_identity;
    const auto& after = settings.web_identity;
    const bool same_role = !settings.keys && !settings_.keys && before && after &&
                           before->role_arn == after->role_arn && before->session_name == after->session_name &&
                           before->sts_endpoint == after->sts_endpoint && before->token_file == after->token_file;
    settings.region = settings_.region;  // the endpoint's, fixed when the source was opened
    settings_ = std::move(settings);
    if (same_role) return;
    ++settings_serial_;
    ++version_;
    temporary_.reset();
    retry_at_ = {};
    last_failure_.clear();
}

CredentialSource::Current AwsCredentialSource::current_locked() const {
    std::vector<Credentials> credentials;
    const AwsKeys* keys = settings_.keys ? &*settings_.keys : temporary_ ? &temporary_->keys : nullptr;
    if (keys != nullptr) {
        credentials.push_back(
            {origin_, "", AwsSigning{settings_.region, keys->access_key, keys->secret_key, keys->session_token}});
    }
    return {std::move(credentials), version_};
}

CredentialSource::Current AwsCredentialSource::current(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    for (;;) {
        follow_secrets();
        if (!settings_.web_identity) return current_locked();
        const auto now = SystemClock::now();
        const bool valid = temporary_ && now + kExpiryMargin < temporary_->expiration;
        const bool due = !temporary_ || now >= renew_at_;
        // Keys that hold go on being used while another thread renews them, or after a failed try, for a while.
        if (valid && (!due || renewing_ || now < retry_at_)) return current_locked();
        if (!valid && !renewing_ && !last_failure_.empty() &&
            std::chrono::steady_clock::now() < failed_at_ + kFailureKept) {
            throw CredentialsError(last_failure_);
        }
        if (renewing_) {
            if (renewed_.wait_until(lock, deadline) == std::cv_status::timeout) {
                throw CredentialsError("no AWS keys from STS (" + settings_.web_identity->sts_endpoint +
                                       ") within the request's time");
            }
            continue;
        }
        renewing_ = true;
        const AwsWebIdentity identity = *settings_.web_identity;
        const std::uint64_t serial = settings_serial_;
        std::optional<TemporaryKeys> got;
        std::string failure;
        lock.unlock();
        try {
            got = assume_role(identity, deadline);
        } catch (const CredentialsError& error) {
            failure = error.what();
        }
        lock.lock();
        renewing_ = false;
        renewed_.notify_all();
        if (serial != settings_serial_) continue;  // new secrets meanwhile: these keys are not theirs
        if (got) {
            if (SystemClock::now() + kExpiryMargin >= got->expiration) {
                throw CredentialsError("AWS STS (" + identity.sts_endpoint + ") gave keys that expire at " +
                                       utc_text(got->expiration) + ", which is not later than this machine's "
                                       "clock: set it right (NTP)");
            }
            const bool renewal = temporary_.has_value();
            temporary_ = std::move(*got);
            renew_at_ = renewal_time(now, temporary_->expiration);
            retry_at_ = {};
            last_failure_.clear();
            ++version_;
            if (renewal) {
                log_warning("AWS web identity: renewed the keys of role " + identity.role_arn + " (access key " +
                            temporary_->keys.access_key + ", until " + utc_text(temporary_->expiration) + ")");
            }
            continue;
        }
        last_failure_ = failure;
        failed_at_ = std::chrono::steady_clock::now();
        if (!valid) throw CredentialsError(failure);
        const auto left = temporary_->expiration - now;
        retry_at_ = now + std::clamp<SystemClock::duration>(left / 4, std::chrono::seconds(1), kLongestRetryPause);
        log_warning("AWS web identity: cannot renew the keys yet: " + failure + "; the keys in use hold until " +
                    utc_text(temporary_->expiration));
        return current_locked();
    }
}

std::uint64_t AwsCredentialSource::version() const {
    const std::lock_guard lock(mutex_);
    return secrets_generation() != generation_ ? version_ + 1 : version_;
}

bool AwsCredentialSource::expired(std::uint64_t used) {
    const std::lock_guard lock(mutex_);
    if (used != version_) return true;  // other keys already
    if (!settings_.web_identity || !temporary_) return false;
    // The store says they expired (its clock is ahead of ours): renew now.
    temporary_->expiration = std::min(temporary_->expiration, SystemClock::now());
    retry_at_ = {};
    return true;
}

AwsCredentialSource::Description AwsCredentialSource::describe() const {
    const std::lock_guard lock(mutex_);
    Description description;
    description.unsupported_source = settings_.unsupported_source;
    description.incomplete_source = settings_.incomplete_source;
    if (settings_.keys) {
        description.signs = true;
        description.access_key = settings_.keys->access_key;
        description.found_in = settings_.keys->found_in;
    } else if (settings_.web_identity) {
        description.signs = true;
        description.role_arn = settings_.web_identity->role_arn;
        description.found_in = "web identity (role " + settings_.web_identity->role_arn + ", from " +
                               settings_.web_identity->found_in + ")";
        if (temporary_) description.access_key = temporary_->keys.access_key;
    }
    return description;
}

TemporaryKeys AwsCredentialSource::assume_role(const AwsWebIdentity& identity,
                                               std::chrono::steady_clock::time_point deadline) {
    const std::string token = read_token(identity);
    std::string session = identity.session_name;
    if (session.empty()) {
        const std::string volume = kubernetes_volume();
        session = "tensorfs-" + (volume.empty() ? std::to_string(::time(nullptr)) : volume);
    }
    Request request;
    request.url = identity.sts_endpoint;
    if (request.url.find("://") != std::string::npos && request.url.find('/', request.url.find("://") + 3) ==
                                                            std::string::npos) {
        request.url += "/";
    }
    request.form = "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=" + percent_encode(identity.role_arn) +
                   "&RoleSessionName=" + percent_encode(session_name_of(session)) +
                   "&WebIdentityToken=" + percent_encode(token);
    request.capacity = kMaxStsAnswerBytes;
    request.deadline = deadline;
    const std::string asked = "AWS STS (" + without_credentials(identity.sts_endpoint) + ")";
    Response response;
    try {
        response = sts_.send(request);
    } catch (const HttpError& error) {
        throw CredentialsError(asked + ": " + error.what());
    }
    if (!response.ok()) {
        // <ErrorResponse><Error><Type/><Code/><Message/></Error></ErrorResponse>
        std::string code;
        std::string message;
        try {
            const XmlElement root = parse_xml(response.body);
            const XmlElement* error = root.name == "Error" ? &root : root.child("Error");
            if (error != nullptr) {
                code = error->child_text("Code").value_or("");
                message = error->child_text("Message").value_or("");
            }
        } catch (const XmlError&) {
        }
        std::string text = asked + " refused the web identity token for role " + identity.role_arn + ": ";
        text += code.empty() ? response.status_text()
                             : code + (message.empty() ? "" : ": " + message) + " (HTTP " +
                                   std::to_string(response.status) + ")";
        if (const std::string advice = sts_advice(code, identity); !advice.empty()) text += "; " + advice;
        throw CredentialsError(single_line(text));
    }
    try {
        return read_sts_answer(response.body);
    } catch (const std::runtime_error& error) {
        throw CredentialsError(asked + ": the answer is not one of AssumeRoleWithWebIdentity: " + error.what());
    }
}

}  // namespace tensorfs::remote
