#include "aws_config.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>

#include "secrets.hpp"
#include "tensorfs/errors.hpp"
#include "trim_space.hpp"

namespace tensorfs::remote {
namespace {

constexpr std::size_t kMaxFileBytes = 1 << 20;
constexpr std::string_view kDefaultRegion = "us-east-1";

// Ways of getting credentials that AWS's tools know and tensorfs does not take: profile keys and variables (a
// role_arn with web_identity_token_file is taken: web identity).
constexpr std::array<std::string_view, 7> kUnsupportedProfileKeys = {
    "role_arn", "credential_process", "sso_session", "sso_start_url", "web_identity_token_file",
    "credential_source", "login_session"};
constexpr std::array<std::string_view, 2> kUnsupportedVariables = {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                                                   "AWS_CONTAINER_CREDENTIALS_FULL_URI"};

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

// A variable that is set and not empty (AWS's tools treat an empty one as unset).
std::optional<std::string> variable(const Environment& environment, const std::string& name) {
    auto value = environment(name);
    if (value && value->empty()) return std::nullopt;
    return value;
}

std::string home_of(const Environment& environment) {
    if (auto home = variable(environment, "HOME")) return *home;
    const passwd* user = ::getpwuid(::getuid());
    return user != nullptr ? user->pw_dir : "/";
}

// A file named by `name` (default `fallback` under the home folder), with a leading "~/" meaning the home folder.
std::string file_path(const Environment& environment, const std::string& name, const std::string& fallback) {
    std::string path = variable(environment, name).value_or("~/" + fallback);
    if (path == "~" || path.starts_with("~/")) path = home_of(environment) + path.substr(1);
    return path;
}

// The sections of the file at `path`; none when there is no such file.
std::map<std::string, IniSection> read_ini_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        if (::access(path.c_str(), F_OK) != 0) return {};
        throw_problem(path, "cannot be read");
    }
    // At most one byte more than allowed is read: the file may be endless (a device, a pipe).
    std::string text(kMaxFileBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) throw_problem(path, "is larger than 1 MiB: not an AWS settings file");
    return parse_ini(text);
}

bool is_true(const std::optional<std::string>& value) { return value && lower(trim_space(*value)) == "true"; }

const std::string* find(const IniSection* section, const std::string& key) {
    if (section == nullptr) return nullptr;
    const auto found = section->find(key);
    return found == section->end() || found->second.empty() ? nullptr : &found->second;
}

struct Files {
    std::string credentials_path;
    std::string config_path;
    std::map<std::string, IniSection> credentials;
    std::map<std::string, IniSection> config;

    const IniSection* credentials_profile(const std::string& profile) const {
        const auto found = credentials.find(profile);
        return found == credentials.end() ? nullptr : &found->second;
    }
    const IniSection* config_profile(const std::string& profile) const {
        auto found = config.find("profile " + profile);
        if (found == config.end() && profile == "default") found = config.find("default");
        return found == config.end() ? nullptr : &found->second;
    }
};

// Keys from one section; nullopt when it has none, refused when it has half a pair.
std::optional<AwsKeys> keys_of(const IniSection* section, const std::string& found_in) {
    const std::string* access = find(section, "aws_access_key_id");
    const std::string* secret = find(section, "aws_secret_access_key");
    if (access == nullptr && secret == nullptr) return std::nullopt;
    if (access == nullptr || secret == nullptr) {
        throw_problem(found_in, std::string("has ") + (access ? "aws_access_key_id without aws_secret_access_key"
                                                              : "aws_secret_access_key without aws_access_key_id"));
    }
    const std::string* token = find(section, "aws_session_token");
    if (token == nullptr) token = find(section, "aws_security_token");
    return AwsKeys{*access, *secret, token ? *token : "", found_in};
}

std::optional<AwsKeys> keys_from_environment(const Environment& environment) {
    const auto access = variable(environment, "AWS_ACCESS_KEY_ID");
    const auto secret = variable(environment, "AWS_SECRET_ACCESS_KEY");
    if (!access && !secret) return std::nullopt;
    if (!access) throw_problem("AWS_SECRET_ACCESS_KEY", "is set without AWS_ACCESS_KEY_ID");
    if (!secret) throw_problem("AWS_ACCESS_KEY_ID", "is set without AWS_SECRET_ACCESS_KEY");
    auto token = variable(environment, "AWS_SESSION_TOKEN");
    if (!token) token = variable(environment, "AWS_SECURITY_TOKEN");
    return AwsKeys{*access, *secret, token.value_or(""),
                   is_given("AWS_ACCESS_KEY_ID") ? given_secrets_place() : "the environment"};
}

// AWS's regional STS endpoint (botocore's default since 2022; the global one is us-east-1's).
std::string regional_sts_endpoint(const std::string& region) {
    return "https://sts." + region + (region.starts_with("cn-") ? ".amazonaws.com.cn" : ".amazonaws.com");
}

// Web identity from the environment (or given secrets), else from the profile; nullopt when neither names both
// a role and a token. `half`: what names only one of them, for messages.
std::optional<AwsWebIdentity> web_identity_of(const Environment& environment, const IniSection* profile,
                                              const std::string& profile_name, const std::string& config_path,
                                              std::string& half) {
    AwsWebIdentity identity;
    const auto role = variable(environment, "AWS_ROLE_ARN");
    const auto token = variable(environment, "AWS_WEB_IDENTITY_TOKEN");
    const auto token_file = variable(environment, "AWS_WEB_IDENTITY_TOKEN_FILE");
    if (role && (token || token_file)) {
        identity.role_arn = *role;
        if (token) {
            identity.token = *token;
            identity.found_in = given_secrets_place();
        } else {
            identity.token_file = *token_file;
            identity.found_in = "the environment (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE)";
        }
        identity.session_name = variable(environment, "AWS_ROLE_SESSION_NAME").value_or("");
        return identity;
    }
    const std::string* profile_role = find(profile, "role_arn");
    const std::string* profile_file = find(profile, "web_identity_token_file");
    if (profile_role != nullptr && profile_file != nullptr) {
        identity.role_arn = *profile_role;
        identity.token_file = *profile_file;
        if (identity.token_file == "~" || identity.token_file.starts_with("~/")) {
            identity.token_file = home_of(environment) + identity.token_file.substr(1);
        }
        const std::string* session = find(profile, "role_session_name");
        identity.session_name = session ? *session : "";
        identity.found_in = "profile '" + profile_name + "' of " + config_path;
        return identity;
    }
    if (token && !role) {
        half = kubernetes_volume().empty()
                   ? "a web identity token was given without AWS_ROLE_ARN"
                   : "the volume has the pod's service account token (the CSIDriver's tokenRequests) but no "
                     "aws_role_arn attribute naming the role to assume";
    } else if (token_file && !role) {
        half = "AWS_WEB_IDENTITY_TOKEN_FILE is set without AWS_ROLE_ARN";
    } else if (role && !token && !token_file && profile_role == nullptr) {
        half = kubernetes_volume().empty()
                   ? "AWS_ROLE_ARN is set without AWS_WEB_IDENTITY_TOKEN_FILE"
                   : "the volume names a role (aws_role_arn) but kubelet gave no service account token for "
                     "audience sts.amazonaws.com: the CSIDriver csi.tensorfs.io needs tokenRequests";
    }
    return std::nullopt;
}

std::string unsupported_source(const Environment& environment, const IniSection* profile, const std::string& name) {
    for (const auto key : kUnsupportedProfileKeys) {
        if (find(profile, std::string(key)) != nullptr) return "profile '" + name + "' gets them by " + std::string(key);
    }
    for (const auto name_of_variable : kUnsupportedVariables) {
        if (variable(environment, std::string(name_of_variable))) return std::string(name_of_variable) + " is set";
    }
    return {};
}

bool has_control_bytes(const std::string& text) {
    return std::any_of(text.begin(), text.end(), [](unsigned char c) { return c < 0x20 || c == 0x7F; });
}

// Keys go into request headers: a line break in one would start a header of its own.
void check_keys(const AwsKeys& keys) {
    if (has_control_bytes(keys.access_key) || has_control_bytes(keys.secret_key) ||
        has_control_bytes(keys.session_token)) {
        throw_problem(keys.found_in, "the AWS keys or session token hold control characters");
    }
}

// A region names a host (s3.REGION.amazonaws.com) and a part of the signature's scope.
void check_region(const std::string& region, const std::string& found_in) {
    const bool plain = !region.empty() && region.size() <= 64 &&
                       std::all_of(region.begin(), region.end(), [](unsigned char c) {
                           return std::isalnum(c) || c == '-' || c == '_' || c == '.';
                       });
    if (!plain) {
        throw_problem(found_in, "region '" + region + "' is not a region name (letters, digits, '-', '_', '.')");
    }
}

// The endpoint of `service` ("s3", "sts") the settings name, as AWS's tools find it; empty: AWS's own.
std::string endpoint_of(const Environment& environment, const Files& files, const IniSection* profile,
                        const std::string& service) {
    if (is_true(variable(environment, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"))) return {};
    if (const std::string* ignore = find(profile, "ignore_configured_endpoint_urls"); ignore && is_true(*ignore)) {
        return {};
    }
    std::string upper = service;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
    if (auto url = variable(environment, "AWS_ENDPOINT_URL_" + upper)) return *url;
    if (auto url = variable(environment, "AWS_ENDPOINT_URL")) return *url;
    if (const std::string* services = find(profile, "services")) {
        const auto section = files.config.find("services " + *services);
        if (section != files.config.end()) {
            if (const std::string* url = find(&section->second, service + ".endpoint_url")) return *url;
        }
    }
    if (const std::string* url = find(profile, "endpoint_url")) return *url;
    return {};
}

}  // namespace

std::map<std::string, IniSection> parse_ini(std::string_view text) {
    std::map<std::string, IniSection> sections;
    IniSection* section = nullptr;
    std::string parent;  // the key whose empty value opened nested settings
    while (!text.empty()) {
        const std::size_t newline = text.find('\n');
        std::string_view line = text.substr(0, newline);
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
        const bool indented = !line.empty() && (line.front() == ' ' || line.front() == '\t');
        line = trim_space(line);
        if (line.empty() || line.front() == '#' || line.front() == ';') continue;
        if (line.front() == '[' && line.back() == ']' && !indented) {
            section = &sections[std::string(trim_space(line.substr(1, line.size() - 2)))];
            parent.clear();
            continue;
        }
        const std::size_t separator = line.find_first_of("=:");
        if (section == nullptr || separator == std::string_view::npos) continue;  // the CLI refuses these files
        const std::string key = lower(trim_space(line.substr(0, separator)));
        const std::string value(trim_space(line.substr(separator + 1)));
        if (indented && !parent.empty()) {
            (*section)[parent + "." + key] = value;
        } else {
            (*section)[key] = value;
            parent = value.empty() ? key : std::string();
        }
    }
    return sections;
}

AwsSettings read_aws_settings() { return read_aws_settings(credential_variable); }

AwsSettings read_aws_settings(const Environment& environment) {
    Files files;
    files.credentials_path = file_path(environment, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
    files.config_path = file_path(environment, "AWS_CONFIG_FILE", ".aws/config");
    files.credentials = read_ini_file(files.credentials_path);
    files.config = read_ini_file(files.config_path);

    AwsSettings settings;
    std::string profile_variable = "AWS_PROFILE";
    auto named_profile = variable(environment, profile_variable);
    if (!named_profile) named_profile = variable(environment, profile_variable = "AWS_DEFAULT_PROFILE");
    settings.profile = named_profile.value_or("default");
    const IniSection* credentials_profile = files.credentials_profile(settings.profile);
    const IniSection* config_profile = files.config_profile(settings.profile);
    if (named_profile && credentials_profile == nullptr && config_profile == nullptr) {
        throw_problem(files.config_path, "has no profile '" + settings.profile + "' (named by " + profile_variable +
                                             "), and " + files.credentials_path + " has none either");
    }

    // As botocore's chain: the environment's keys, then web identity, then the profiles' keys.
    settings.keys = keys_from_environment(environment);
    std::string half_identity;
    if (!settings.keys) {
        settings.web_identity =
            web_identity_of(environment, config_profile, settings.profile, files.config_path, half_identity);
    }
    if (!settings.keys && !settings.web_identity) {
        settings.keys = keys_of(credentials_profile,
                                "profile '" + settings.profile + "' of " + files.credentials_path);
    }
    if (!settings.keys && !settings.web_identity) {
        settings.keys = keys_of(config_profile, "profile '" + settings.profile + "' of " + files.config_path);
    }
    if (!settings.keys && !settings.web_identity) {
        settings.incomplete_source = half_identity;
        settings.unsupported_source = unsupported_source(environment, config_profile, settings.profile);
        if (settings.unsupported_source.empty()) {
            settings.unsupported_source = unsupported_source(environment, credentials_profile, settings.profile);
        }
    }

    std::string region_found_in = "AWS_REGION";
    if (auto region = variable(environment, "AWS_REGION")) {
        settings.region = *region;
    } else if (auto default_region = variable(environment, "AWS_DEFAULT_REGION")) {
        settings.region = *default_region;
        region_found_in = "AWS_DEFAULT_REGION";
    } else if (const std::string* profile_region = find(config_profile, "region")) {
        settings.region = *profile_region;
        region_found_in = "profile '" + settings.profile + "' of " + files.config_path;
    } else {
        settings.region = kDefaultRegion;
    }
    check_region(settings.region, region_found_in);
    if (settings.keys) check_keys(*settings.keys);
    settings.endpoint = endpoint_of(environment, files, config_profile, "s3");
    if (settings.web_identity) {
        settings.web_identity->sts_endpoint = endpoint_of(environment, files, config_profile, "sts");
        if (settings.web_identity->sts_endpoint.empty()) {
            settings.web_identity->sts_endpoint = regional_sts_endpoint(settings.region);
        }
    }
    return settings;
}

}  // namespace tensorfs::remote
