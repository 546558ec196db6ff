// AWS settings, read the way AWS's own tools (the CLI, the SDKs) read them:
//
//   keys      AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); else the profile's
//             aws_access_key_id, aws_secret_access_key, aws_session_token in the shared credentials file
//             ($AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials, section [NAME]), else in the config file
//             ($AWS_CONFIG_FILE, default ~/.aws/config, section [profile NAME], or [default]); none: unsigned
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

struct AwsSettings {
    std::string profile;
    std::string region;
    std::string endpoint;          // empty: AWS's own
    std::optional<AwsKeys> keys;   // none: requests go unsigned
    // When there are no keys but the profile or the environment names a way of getting them that tensorfs does
    // not take (role_arn, credential_process, SSO, web identity, containers): what it is, for messages.
    std::string unsupported_source;
};

// The value of an environment variable; nullopt when it is unset.
using Environment = std::function<std::optional<std::string>(const std::string&)>;

// The settings for this process's environment. Throws InvalidSource, naming the file or the variable, when a
// profile named by AWS_PROFILE does not exist, when only half of a key pair is given, or when a file cannot be
// read.
AwsSettings read_aws_settings();
AwsSettings read_aws_settings(const Environment& environment);

// One section of an INI file: key → value; nested settings as "parent.key".
using IniSection = std::map<std::string, std::string>;
// The sections of an INI file's text, by name (keys lower-cased, as the CLI does).
std::map<std::string, IniSection> parse_ini(std::string_view text);

}  // namespace tensorfs::remote
