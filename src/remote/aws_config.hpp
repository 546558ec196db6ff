// AWS settings, read the way AWS's own tools (the CLI, the SDKs) read them:
//
//   keys      AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); else web identity (below); else the
//             profile's aws_access_key_id, aws_secret_access_key, aws_session_token in the shared credentials file
//             ($AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials, section [NAME]), else in the config file
//             ($AWS_CONFIG_FILE, default ~/.aws/config, section [profile NAME], or [default]); none: unsigned
//   web identity  AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE (+ AWS_ROLE_SESSION_NAME), else the profile's
//             role_arn + web_identity_token_file (+ role_session_name): temporary keys from AWS STS's
//             AssumeRoleWithWebIdentity (aws_credentials.hpp), as EKS's IAM roles for service accounts give them;
//             a token given to tensorfs (AWS_WEB_IDENTITY_TOKEN, secrets.hpp) takes the place of the file
//   STS       $AWS_ENDPOINT_URL_STS, else $AWS_ENDPOINT_URL, else the sts endpoint_url of the profile's [services]
//             section, else the profile's endpoint_url (none when endpoint URLs are ignored, as for S3); none at
//             all: AWS's regional endpoint, https://sts.REGION.amazonaws.com
//   profile   $AWS_PROFILE, else $AWS_DEFAULT_PROFILE, else "default"
//   region    $AWS_REGION, else $AWS_DEFAULT_REGION, else the profile's region, else us-east-1
//   endpoint  $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL, else the s3 endpoint_url of the profile's
//             [services NAME] section, else the profile's endpoint_url; none of these when
//             $AWS_IGNORE_CONFIGURED_ENDPOINT_URLS or the profile's ignore_configured_endpoint_urls is true;
//             none at all: AWS's own endpoints
//
// The files are INI files as the CLI reads them: `key = value` (or `key: value`), comments on lines of their own
// starting with '#' or ';', and nested settings (`s3 =` followed by indented `key = value` lines).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tensorfs::remote {

struct AwsKeys {
    std::string access_key;
    std::string secret_key;
    std::string session_token;   // empty for long-term keys
    std::string found_in;        // where they were read, for messages: "the environment", "profile 'x' of FILE"
};

// Where temporary keys come from when they come from a web identity token.
struct AwsWebIdentity {
    std::string role_arn;
    std::string token_file;    // read at each renewal; empty when the token is given
    std::string token;         // the token given to tensorfs (AWS_WEB_IDENTITY_TOKEN); empty: read token_file
    std::string session_name;  // empty: tensorfs names the session
    std::string sts_endpoint;  // "https://sts.us-east-1.amazonaws.com", or the one the settings name
    std::string found_in;      // "the environment", "profile 'x' of FILE", or where given secrets come from
};

struct AwsSettings {
    std::string profile;
    std::string region;
    std::string endpoint;          // empty: AWS's own
    std::optional<AwsKeys> keys;   // none: web identity, or requests go unsigned
    std::optional<AwsWebIdentity> web_identity;  // only when there are no keys
    // When there are neither keys nor a web identity but the profile or the environment names a way of getting
    // them that tensorfs does not take (role_arn with a source profile, credential_process, SSO, containers):
    // what it is, for messages.
    std::string unsupported_source;
    // ... or half of a web identity (a token without a role, a role without a token): what is missing.
    std::string incomplete_source;
};

// The value of an environment variable; nullopt when it is unset.
using Environment = std::function<std::optional<std::string>(const std::string&)>;

// The settings for this process's environment and the secrets given to it (credential_variable, secrets.hpp).
// Throws SourceError, naming the file or the variable, when a profile named by AWS_PROFILE does not exist, when
// only half of a key pair is given, or when a file cannot be read.
AwsSettings read_aws_settings();
AwsSettings read_aws_settings(const Environment& environment);

// One section of an INI file: key → value; nested settings as "parent.key".
using IniSection = std::map<std::string, std::string>;
// The sections of an INI file's text, by name (keys lower-cased, as the CLI does).
std::map<std::string, IniSection> parse_ini(std::string_view text);

}  // namespace tensorfs::remote
