// The AWS credentials of an s3:// source, kept current while it is read, as AWS's SDKs keep them:
//
//   - keys (aws_config.hpp) are used as they are, and read again whenever the secrets given to the process change
//     (a republish of a Kubernetes volume with a changed Secret: secrets.hpp);
//   - web identity: temporary keys from AWS STS's AssumeRoleWithWebIdentity (a POST to the STS endpoint with the
//     role, a session name and the token: the token file is read again at each renewal, or the token given with the
//     secrets), renewed before they expire: 5 minutes before, or halfway through their life when that is shorter
//     (STS's keys live an hour by default). A renewal that fails while the keys still hold is logged and tried
//     again a little later; once they have expired, requests fail with STS's refusal and what to do about it. A
//     request that the store refuses as expired (ExpiredToken: a clock that is off) renews them at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "aws_config.hpp"
#include "http_client.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs::remote {

// Temporary keys and when they expire.
struct TemporaryKeys {
    AwsKeys keys;
    std::chrono::system_clock::time_point expiration;
};

// Reads STS's answer to AssumeRoleWithWebIdentity. Throws std::runtime_error saying what is wrong when it is not
// one (or lacks a key, the token or the expiration).
TemporaryKeys read_sts_answer(const std::string& body);

// "2024-05-01T12:00:00Z" (fractions of a second and a "+00:00" zone allowed) as a time; nullopt when it is not one.
std::optional<std::chrono::system_clock::time_point> parse_iso8601(const std::string& text);

// When keys obtained at `obtained` that expire at `expiration` are renewed: 5 minutes before they expire, or
// halfway through their life when that is shorter.
std::chrono::system_clock::time_point renewal_time(std::chrono::system_clock::time_point obtained,
                                                   std::chrono::system_clock::time_point expiration);

// A RoleSessionName as STS takes it: 2 to 64 of [A-Za-z0-9+=,.@_-], others made '_'.
std::string session_name_of(const std::string& wanted);

class AwsCredentialSource : public CredentialSource {
public:
    // Signs requests to `origin` (the S3 endpoint's) for `settings.region`. `options`: the proxy, headers and
    // timeout of requests to STS.
    AwsCredentialSource(std::string origin, AwsSettings settings, const SourceOptions& options);

    Current current(std::chrono::steady_clock::time_point deadline) override;
    std::uint64_t version() const override;
    bool expired(std::uint64_t used) override;

    // What is not secret about the credentials in use, for messages.
    struct Description {
        bool signs = false;              // keys, or a web identity
        std::string access_key;          // of the keys in use; empty before temporary keys were had
        std::string found_in;            // where the keys or the web identity come from
        std::string role_arn;            // web identity: the role
        std::string unsupported_source;  // AwsSettings::unsupported_source
        std::string incomplete_source;   // AwsSettings::incomplete_source, or what is wrong with given secrets
    };
    Description describe() const;

private:
    // Reads the settings again when the given secrets changed. Called with mutex_ held.
    void follow_secrets();
    // AssumeRoleWithWebIdentity for `identity`. Throws CredentialsError saying why it failed and what to do.
    TemporaryKeys assume_role(const AwsWebIdentity& identity, std::chrono::steady_clock::time_point deadline);
    Current current_locked() const;

    const std::string origin_;
    RemoteCounters sts_counters_;  // STS's requests are not the source's
    HttpClient sts_;

    mutable std::mutex mutex_;
    std::condition_variable renewed_;
    AwsSettings settings_;
    std::uint64_t generation_ = 0;  // of the given secrets, when settings_ were read
    std::uint64_t version_ = 1;     // moves whenever the keys in use change
    std::uint64_t settings_serial_ = 0;  // moves whenever settings_ are read again
    std::optional<TemporaryKeys> temporary_;
    std::chrono::system_clock::time_point renew_at_{};
    std::chrono::system_clock::time_point retry_at_{};  // after a failed renewal while the keys still hold
    bool renewing_ = false;
    std::string last_failure_;  // of the last renewal, when it failed
    std::chrono::steady_clock::time_point failed_at_{};
};

}  // namespace tensorfs::remote
