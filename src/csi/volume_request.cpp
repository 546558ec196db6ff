#include "volume_request.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "mountinfo.hpp"
#include "tensorfs/settings.hpp"

namespace tensorfs::csi {
namespace {

using AccessMode = ::csi::v1::VolumeCapability::AccessMode;

constexpr std::array<std::string_view, 6> kSecretNames = {"HF_TOKEN",          "AWS_ACCESS_KEY_ID",
                                                          "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                                                          "username",          "password"};
constexpr std::size_t kMostSecretBytes = 16 * 1024;
// What kubelet puts in volume_context when the CSIDriver has tokenRequests:
// {AUDIENCE: {"token", "expirationTimestamp"}}.
constexpr std::string_view kTokensKey = "csi.storage.k8s.io/serviceAccount.tokens";
// The audience of AWS STS's web identity tokens (EKS's IAM roles for service accounts).
constexpr std::string_view kStsAudience = "sts.amazonaws.com";

grpc::Status invalid(const std::string& message) { return {grpc::StatusCode::INVALID_ARGUMENT, message}; }

bool is_remote(const std::string& source) {
    return source.starts_with("http://") || source.starts_with("https://") || source.starts_with("hf://") ||
           source.starts_with("s3://");
}

// Modes that let a node write: kubelet sends inline volumes as SINGLE_NODE_WRITER with readonly, which is fine.
bool writes(AccessMode::Mode mode) {
    return mode == AccessMode::SINGLE_NODE_WRITER || mode == AccessMode::MULTI_NODE_SINGLE_WRITER ||
           mode == AccessMode::MULTI_NODE_MULTI_WRITER || mode == AccessMode::SINGLE_NODE_SINGLE_WRITER ||
           mode == AccessMode::SINGLE_NODE_MULTI_WRITER;
}

grpc::Status check_capability(const ::csi::v1::NodePublishVolumeRequest& message) {
    if (!message.has_volume_capability()) return invalid("volume_capability is missing");
    const auto& capability = message.volume_capability();
    if (capability.has_block()) {
        return invalid("volume_capability: block access is not supported: a tensorfs volume is a folder (mount)");
    }
    if (!capability.has_mount()) return invalid("volume_capability: access_type is missing (want mount)");
    const std::string& fs_type = capability.mount().fs_type();
    if (!fs_type.empty() && fs_type != "tensorfs" && fs_type != "fuse.tensorfs") {
        return invalid("volume_capability: fs_type '" + fs_type + "' is not tensorfs");
    }
    for (const auto& flag : capability.mount().mount_flags()) {
        if (flag != "ro") {
            return invalid("volume_capability: mount flag '" + flag +
                           "' is not taken (give tensorfs's options as volumeAttributes)");
        }
    }
    if (!capability.has_access_mode() || capability.access_mode().mode() == AccessMode::UNKNOWN) {
        return invalid("volume_capability: access_mode is missing");
    }
    const AccessMode::Mode mode = capability.access_mode().mode();
    if (writes(mode) && !message.readonly()) {
        return invalid("volume_capability: access mode " + AccessMode::Mode_Name(mode) +
                       " without readonly: tensorfs volumes are read-only (set readOnly: true)");
    }
    return grpc::Status::OK;
}

// The lines of a value that may hold several (volume_context["header"]: one header per line), blank ones left out.
std::vector<std::string> lines_of(const std::string& value) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start <= value.size()) {
        std::size_t end = value.find('\n', start);
        if (end == std::string::npos) end = value.size();
        std::string line = value.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) lines.push_back(std::move(line));
        start = end + 1;
    }
    return lines;
}

// A value that goes to the daemon with the secrets: printable, one line.
bool is_one_plain_line(const std::string& value, std::size_t most = 2048) {
    return !value.empty() && value.size() <= most && std::none_of(value.begin(), value.end(), [](char c) {
        return static_cast<unsigned char>(c) < ' ' || c == 0x7f;
    });
}

// The pod's service account token for AWS STS, from kubelet's tokenRequests: the one of audience
// sts.amazonaws.com, or the only one. Empty when there is none.
grpc::Status take_token(const std::string& tokens, std::string& token) {
    const nlohmann::json parsed = nlohmann::json::parse(tokens, nullptr, false);
    if (!parsed.is_object()) return invalid("volume_context: " + std::string(kTokensKey) + " is not a JSON object");
    const nlohmann::json* chosen = nullptr;
    if (parsed.contains(kStsAudience)) {
        chosen = &parsed[std::string(kStsAudience)];
    } else if (parsed.size() == 1) {
        chosen = &parsed.begin().value();
    } else if (!parsed.empty()) {
        return invalid("volume_context: kubelet gave service account tokens for several audiences, none of them " +
                       std::string(kStsAudience) + ": the CSIDriver's tokenRequests should name that one");
    }
    if (chosen == nullptr) return grpc::Status::OK;
    if (!chosen->is_object() || !chosen->contains("token") || !(*chosen)["token"].is_string() ||
        !is_one_plain_line((*chosen)["token"].get<std::string>(), 16 * 1024)) {
        return invalid("volume_context: a token of " + std::string(kTokensKey) + " is not {\"token\": TEXT, ...}");
    }
    token = (*chosen)["token"].get<std::string>();
    return grpc::Status::OK;
}

// AWS web identity: the role named by the volume (aws_role_arn; else the plugin's environment may name one for
// every volume), the session's name, and the pod's token. They go to the daemon with the secrets.
grpc::Status check_web_identity(const std::map<std::string, std::string>& context, PublishRequest& request) {
    const auto find = [&](const std::string& key) -> const std::string* {
        const auto found = context.find(key);
        return found == context.end() ? nullptr : &found->second;
    };
    const std::string* role = find("aws_role_arn");
    const std::string* session = find("aws_role_session_name");
    const std::string* tokens = find(std::string(kTokensKey));
    const bool s3 = request.source.starts_with("s3://");
    if ((role || session) && !s3) return invalid("volume_context: aws_role_arn is for an s3:// source");
    if (role) {
        if (!role->starts_with("arn:") || !is_one_plain_line(*role)) {
            return invalid("volume_context: aws_role_arn '" + *role +
                           "' is not a role's ARN (arn:aws:iam::ACCOUNT:role/NAME)");
        }
        request.secrets["AWS_ROLE_ARN"] = *role;
    }
    if (session && !is_one_plain_line(*session)) {
        return invalid("volume_context: aws_role_session_name is not one plain line");
    }
    if (!s3) return grpc::Status::OK;
    if (session) {
        request.secrets["AWS_ROLE_SESSION_NAME"] = *session;
    } else {
        // Seen in CloudTrail: which pod read the bucket.
        const std::string* pod_namespace = find("csi.storage.k8s.io/pod.namespace");
        const std::string* pod_name = find("csi.storage.k8s.io/pod.name");
        if (pod_namespace && pod_name && is_one_plain_line(*pod_namespace) && is_one_plain_line(*pod_name)) {
            request.secrets["AWS_ROLE_SESSION_NAME"] = "tensorfs." + *pod_namespace + "." + *pod_name;
        }
    }
    // The pod's token goes to the daemon only for a role to assume (the volume's, or one the plugin's environment
    // names for every volume): a volume that reads with keys, or unsigned, never holds it.
    const char* node_role = std::getenv("AWS_ROLE_ARN");
    if (tokens && (role || (node_role != nullptr && *node_role != '\0'))) {
        std::string token;
        if (auto status = take_token(*tokens, token); !status.ok()) return status;
        if (!token.empty()) request.secrets["AWS_WEB_IDENTITY_TOKEN"] = token;
    }
    return grpc::Status::OK;
}

grpc::Status check_context(const ::csi::v1::NodePublishVolumeRequest& message, PublishRequest& request) {
    const auto& context = message.volume_context();
    const auto source = context.find("source");
    if (source == context.end() || source->second.empty()) return invalid("volume_context: source is missing");
    request.source = source->second;
    std::map<std::string, std::string> ordered(context.begin(), context.end());
    const auto& keys = volume_option_keys();
    for (const auto& [key, value] : ordered) {
        if (key == "source" || key.starts_with("csi.storage.k8s.io/")) continue;
        if (key == "aws_role_arn" || key == "aws_role_session_name") continue;  // check_web_identity
        if (key == "cache_dir" || key == "disk_cache_size") {
            return invalid("volume_context: '" + key + "' is the node's, not a volume's: one disk cache serves every "
                           "volume (tensorfs csi --cache-dir, --disk-cache-size)");
        }
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
            std::string known;
            for (const auto& name : keys) known += (known.empty() ? "" : ", ") + name;
            return invalid("volume_context: unknown key '" + key + "' (source, aws_role_arn, aws_role_session_name, " +
                           "or a mount option: " + known + ")");
        }
        if (value.find(',') != std::string::npos) {
            return invalid("volume_context: the value of '" + key + "' holds a comma, which no mount option takes");
        }
        // Checked now, as the mount will take it, so that a bad value is the publish's refusal.
        Settings checked;
        checked.csi_volume = request.volume_id;
        for (const std::string& line : key == "header" ? lines_of(value) : std::vector<std::string>{value}) {
            const TakenSetting taken = take_setting(key, line, checked);
            if (taken.outcome == SettingOutcome::Refused) return invalid("volume_context: " + taken.message);
        }
        if (key == "header") {
            for (const std::string& line : lines_of(value)) request.options.push_back("header=" + line);
        } else {
            request.options.push_back(key + "=" + value);
        }
    }
    return grpc::Status::OK;
}

grpc::Status check_secrets(const ::csi::v1::NodePublishVolumeRequest& message, PublishRequest& request) {
    std::size_t bytes = 0;
    // Sorted, so that a refusal names the same key whatever the map's order.
    const std::map<std::string, std::string> given(message.secrets().begin(), message.secrets().end());
    for (const auto& [name, raw] : given) {
        if (std::find(kSecretNames.begin(), kSecretNames.end(), name) == kSecretNames.end()) {
            return invalid("secrets: unknown key '" + name + "' (HF_TOKEN, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, " +
                           "AWS_SESSION_TOKEN, username, password)");
        }
        // A secret made from a file (kubectl create secret --from-file) often ends with a newline.
        std::string value = raw;
        while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
        const bool control = std::any_of(value.begin(), value.end(),
                                         [](char c) { return static_cast<unsigned char>(c) < ' ' || c == 0x7f; });
        if (control) return invalid("secrets: the value of '" + name + "' holds a control character");
        bytes += name.size() + value.size();
        request.secrets[name] = std::move(value);
    }
    if (bytes > kMostSecretBytes) return invalid("secrets: more than 16 KiB");
    const bool http = request.source.starts_with("http://") || request.source.starts_with("https://");
    if ((request.secrets.count("username") != 0 || request.secrets.count("password") != 0) && !http) {
        return invalid("secrets: username and password are for an http(s):// source");
    }
    return grpc::Status::OK;
}

// A local SOURCE must lie under the plugin's --local-root (symbolic links resolved): a pod may name any volume, and
// the plugin reads the node's files as root.
grpc::Status check_local_source(const std::string& source, const std::filesystem::path& local_root) {
    if (!source.starts_with("/")) {
        return invalid("volume_context: source '" + source +
                       "' is neither an absolute path on the node nor an http(s)://, hf:// or s3:// address");
    }
    std::error_code error;
    const std::filesystem::path resolved = std::filesystem::weakly_canonical(source, error);
    const std::filesystem::path relative = resolved.lexically_relative(local_root);
    if (error || relative.empty() || *relative.begin() == "..") {
        return invalid("volume_context: source '" + source + "' is not under " + local_root.string() +
                       ", the folder of local sources (tensorfs csi --local-root)");
    }
    return grpc::Status::OK;
}

}  // namespace

const std::vector<std::string>& volume_option_keys() {
    // Every option of a user's but the disk cache's, which is the node's.
    static const std::vector<std::string> keys = [] {
        std::vector<std::string> names;
        for (const OptionInfo& option : tensorfs_options()) {
            const bool node_wide = option.name == "cache_dir" || option.name == "disk_cache_size";
            if (option.use != OptionUse::Daemon && !node_wide) names.emplace_back(option.name);
        }
        return names;
    }();
    return keys;
}

grpc::Status check_publish(const ::csi::v1::NodePublishVolumeRequest& message, const std::filesystem::path& local_root,
                           PublishRequest& request) {
    if (message.volume_id().empty()) return invalid("volume_id is missing");
    if (message.target_path().empty()) return invalid("target_path is missing");
    if (!message.target_path().starts_with("/")) return invalid("target_path is not an absolute path");
    if (auto status = check_capability(message); !status.ok()) return status;
    request.volume_id = message.volume_id();
    if (auto status = check_context(message, request); !status.ok()) return status;
    if (auto status = check_secrets(message, request); !status.ok()) return status;
    const std::map<std::string, std::string> context(message.volume_context().begin(), message.volume_context().end());
    if (auto status = check_web_identity(context, request); !status.ok()) return status;
    request.target = resolved_target(message.target_path());
    return is_remote(request.source) ? grpc::Status::OK : check_local_source(request.source, local_root);
}

}  // namespace tensorfs::csi
