#include "volume_request.hpp"

#include <algorithm>
#include <array>
#include <filesystem>

#include "mountinfo.hpp"

namespace tensorfs::csi {
namespace {

using AccessMode = ::csi::v1::VolumeCapability::AccessMode;

constexpr std::array<std::string_view, 6> kSecretNames = {"HF_TOKEN",          "AWS_ACCESS_KEY_ID",
                                                          "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                                                          "username",          "password"};
constexpr std::size_t kMostSecretBytes = 16 * 1024;

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

// volume_context["header"] may hold several headers, one per line.
void add_headers(const std::string& value, std::vector<std::string>& options) {
    std::size_t start = 0;
    while (start <= value.size()) {
        std::size_t end = value.find('\n', start);
        if (end == std::string::npos) end = value.size();
        std::string line = value.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) options.push_back("header=" + line);
        start = end + 1;
    }
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
        if (key == "cache_dir" || key == "disk_cache_size") {
            return invalid("volume_context: '" + key + "' is the node's, not a volume's: one disk cache serves every "
                           "volume (tensorfs csi --cache-dir, --disk-cache-size)");
        }
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
            std::string known;
            for (const auto& name : keys) known += (known.empty() ? "" : ", ") + name;
            return invalid("volume_context: unknown key '" + key + "' (source, or a mount option: " + known + ")");
        }
        if (value.find(',') != std::string::npos) {
            return invalid("volume_context: the value of '" + key + "' holds a comma, which no mount option takes");
        }
        if (key == "header") {
            add_headers(value, request.options);
        } else {
            request.options.push_back(key + "=" + value);
        }
    }
    return grpc::Status::OK;
}

grpc::Status check_secrets(const ::csi::v1::NodePublishVolumeRequest& message, PublishRequest& request) {
    std::size_t bytes = 0;
    for (const auto& [name, raw] : message.secrets()) {
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
    static const std::vector<std::string> keys = {"export_dtype",    "model",     "cache_size", "threads",
                                                  "max_connections", "readahead", "timeout",    "proxy",
                                                  "header"};
    return keys;
}

grpc::Status check_publish(const ::csi::v1::NodePublishVolumeRequest& message, const std::filesystem::path& local_root,
                           PublishRequest& request) {
    if (message.volume_id().empty()) return invalid("volume_id is missing");
    if (message.target_path().empty()) return invalid("target_path is missing");
    if (!message.target_path().starts_with("/")) return invalid("target_path is not an absolute path");
    if (auto status = check_capability(message); !status.ok()) return status;
    if (auto status = check_context(message, request); !status.ok()) return status;
    if (auto status = check_secrets(message, request); !status.ok()) return status;
    request.volume_id = message.volume_id();
    request.target = resolved_target(message.target_path());
    return is_remote(request.source) ? grpc::Status::OK : check_local_source(request.source, local_root);
}

}  // namespace tensorfs::csi
