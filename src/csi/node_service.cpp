#include "node_service.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "mountinfo.hpp"
#include "volume_mounts.hpp"

namespace tensorfs::csi {
namespace {

grpc::Status invalid(const std::string& message) { return {grpc::StatusCode::INVALID_ARGUMENT, message}; }

grpc::Status busy(const std::string& target) {
    return {grpc::StatusCode::ABORTED, "another operation on " + target + " is under way"};
}

// One line on stderr (the container's log) per publish and unpublish, and per failed call.
grpc::Status logged(const char* call, const std::string& target, grpc::Status status) {
    if (status.ok()) {
        std::fprintf(stderr, "tensorfs-csi: %s %s: OK\n", call, target.c_str());
    } else {
        std::fprintf(stderr, "tensorfs-csi: %s %s: code %d: %s\n", call, target.c_str(),
                     static_cast<int>(status.error_code()), status.error_message().c_str());
    }
    return status;
}

// How tensorfs names a SOURCE in /proc/mounts: a local one absolute and normalized.
std::string shown_source(const std::string& source) {
    if (source.find("://") != std::string::npos) return source;
    return std::filesystem::path(source).lexically_normal().string();
}

// Whether the serving mount at a target is this request's volume: by the plugin's record, or, without one (the
// state folder was lost), by the SOURCE the mount table shows.
bool same_volume(const std::optional<PublishedVolume>& record, const MountEntry& mount, const PublishRequest& request) {
    if (record) {
        return record->volume_id == request.volume_id && record->source == request.source &&
               record->options == request.options;
    }
    return mount.fstype == "fuse.tensorfs" && mount.source == shown_source(request.source);
}

}  // namespace

grpc::Status NodeService::NodePublishVolume(grpc::ServerContext*, const ::csi::v1::NodePublishVolumeRequest* message,
                                            ::csi::v1::NodePublishVolumeResponse*) {
    PublishRequest request;
    if (auto status = check_publish(*message, local_root_, request); !status.ok()) {
        return logged("NodePublishVolume", message->target_path(), status);
    }
    const auto held = locks_.take(request.target);
    if (!held) return logged("NodePublishVolume", request.target, busy(request.target));
    return logged("NodePublishVolume", request.target, publish(request));
}

grpc::Status NodeService::publish(const PublishRequest& request) {
    const std::string& target = request.target;
    const auto record = store_.find(target);
    if (const auto mounts = mounts_at(target); !mounts.empty()) {
        const MountHealth health = check_mount(target);
        if (health.state == MountHealth::State::Serving) {
            if (!same_volume(record, mounts.back(), request)) {
                return {grpc::StatusCode::ALREADY_EXISTS,
                        target + " already holds another volume (" +
                            (record ? "volume " + record->volume_id + " of " + record->source : mounts.back().source) +
                            ")"};
            }
            // Published already: one mount, as before. kubelet publishes again about once a minute
            // (requiresRepublish) with the Secret and the pod's token as they are now: the daemon takes them.
            if (auto status = give_secrets_to_daemon(settings_, request); !status.ok()) return status;
            return record ? grpc::Status::OK : remember(request, false);
        }
        // Its daemon died or hangs: take the dead mount away and mount again.
        if (const std::string error = clear_target(target); !error.empty()) {
            return {grpc::StatusCode::INTERNAL, target + ": " + error};
        }
    }
    bool created = false;
    if (::mkdir(target.c_str(), 0750) == 0) {
        created = true;
    } else if (errno != EEXIST) {
        return {grpc::StatusCode::INTERNAL, "cannot make " + target + ": " + std::strerror(errno)};
    } else if (struct stat info {}; ::lstat(target.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
        return invalid("target_path " + target + " is not a folder");
    }
    grpc::Status status;
    if (struct stat info {}; request.source.starts_with("/") && ::stat(request.source.c_str(), &info) != 0) {
        status = {grpc::StatusCode::NOT_FOUND, request.source + ": " + std::strerror(errno) + " on this node"};
    } else {
        status = run_mount(settings_, request);
    }
    // The target folder is the plugin's to remove at unpublish only when the plugin made it (now or before).
    if (status.ok()) status = remember(request, created || (record && record->made_target));
    if (status.ok()) return status;
    // Nothing stays behind a failed publish.
    if (!mounts_at(target).empty()) clear_target(target);
    if (created) ::rmdir(target.c_str());
    return status;
}

grpc::Status NodeService::remember(const PublishRequest& request, bool made_target) {
    try {
        const PublishedVolume volume{request.volume_id, request.target, request.source, request.options, made_target};
        store_.save(volume);
        return grpc::Status::OK;
    } catch (const std::exception& error) {
        return {grpc::StatusCode::INTERNAL, error.what()};
    }
}

grpc::Status NodeService::NodeUnpublishVolume(grpc::ServerContext*,
                                              const ::csi::v1::NodeUnpublishVolumeRequest* message,
                                              ::csi::v1::NodeUnpublishVolumeResponse*) {
    if (message->volume_id().empty()) return logged("NodeUnpublishVolume", "", invalid("volume_id is missing"));
    if (message->target_path().empty()) return logged("NodeUnpublishVolume", "", invalid("target_path is missing"));
    const std::string target = resolved_target(message->target_path());
    const auto held = locks_.take(target);
    if (!held) return logged("NodeUnpublishVolume", target, busy(target));
    return logged("NodeUnpublishVolume", target, unpublish(target));
}

grpc::Status NodeService::unpublish(const std::string& target) {
    const auto record = store_.find(target);
    if (const std::string error = clear_target(target); !error.empty()) {
        return {grpc::StatusCode::INTERNAL, target + ": " + error};
    }
    // A daemon that was killed left its secrets socket behind.
    if (const std::string socket = secrets_socket_of(settings_, target); !socket.empty()) ::unlink(socket.c_str());
    // The folder goes only if the plugin made it (CSI: the plugin deletes what it created at the target).
    if (record && record->made_target && ::rmdir(target.c_str()) != 0 && errno != ENOENT) {
        return {grpc::StatusCode::INTERNAL, "cannot remove " + target + ": " + std::strerror(errno)};
    }
    store_.forget(target);
    return grpc::Status::OK;
}

grpc::Status NodeService::NodeGetVolumeStats(grpc::ServerContext*, const ::csi::v1::NodeGetVolumeStatsRequest* message,
                                             ::csi::v1::NodeGetVolumeStatsResponse* response) {
    if (message->volume_id().empty()) return logged("NodeGetVolumeStats", "", invalid("volume_id is missing"));
    if (message->volume_path().empty()) return logged("NodeGetVolumeStats", "", invalid("volume_path is missing"));
    const std::string target = resolved_target(message->volume_path());
    const auto record = store_.find(target);
    const bool mounted = !mounts_at(target).empty();
    if ((!mounted && !record) || (record && record->volume_id != message->volume_id())) {
        return logged("NodeGetVolumeStats", target,
                      {grpc::StatusCode::NOT_FOUND,
                       "volume " + message->volume_id() + " is not published at " + target});
    }
    // Published, and no longer mounted: its daemon ended and took its mount down (the mount holder was stopped).
    const MountHealth health = mounted ? check_mount(target) : unmounted_health();
    auto* condition = response->mutable_volume_condition();
    condition->set_abnormal(health.state != MountHealth::State::Serving);
    condition->set_message(health.state == MountHealth::State::Serving ? "serving" : health.message);
    if (health.state == MountHealth::State::Serving) {
        auto* bytes = response->add_usage();
        bytes->set_unit(::csi::v1::VolumeUsage::BYTES);
        // A read-only volume is as large as its model and has no room left (as df shows a squashfs image):
        // capacity = used = the model's bytes, available 0, said rather than left out (docs/kubernetes.md).
        bytes->set_total(static_cast<std::int64_t>(health.bytes));
        bytes->set_used(static_cast<std::int64_t>(health.bytes));
        bytes->set_available(0);
        auto* inodes = response->add_usage();
        inodes->set_unit(::csi::v1::VolumeUsage::INODES);
        inodes->set_total(static_cast<std::int64_t>(health.inodes));
        inodes->set_used(static_cast<std::int64_t>(health.inodes));
        inodes->set_available(0);
    }
    return grpc::Status::OK;
}

grpc::Status NodeService::NodeGetCapabilities(grpc::ServerContext*, const ::csi::v1::NodeGetCapabilitiesRequest*,
                                              ::csi::v1::NodeGetCapabilitiesResponse* response) {
    using Rpc = ::csi::v1::NodeServiceCapability::RPC;
    for (const auto type : {Rpc::GET_VOLUME_STATS, Rpc::VOLUME_CONDITION}) {
        response->add_capabilities()->mutable_rpc()->set_type(type);
    }
    return grpc::Status::OK;
}

grpc::Status NodeService::NodeGetInfo(grpc::ServerContext*, const ::csi::v1::NodeGetInfoRequest*,
                                      ::csi::v1::NodeGetInfoResponse* response) {
    response->set_node_id(node_id_);
    return grpc::Status::OK;
}

void NodeService::take_stock() {
    for (const auto& volume : store_.all()) {
        const std::string named = "volume " + volume.volume_id + " (" + volume.source + ") at " + volume.target;
        const bool mounted = !mounts_at(volume.target).empty();
        if (!mounted && ::access(volume.target.c_str(), F_OK) != 0) {
            std::fprintf(stderr, "tensorfs-csi: %s: no longer there (unpublished while the plugin was down)\n",
                         named.c_str());
            store_.forget(volume.target);
            continue;
        }
        const MountHealth health = mounted ? check_mount(volume.target) : unmounted_health();
        if (health.state == MountHealth::State::Serving) {
            std::fprintf(stderr, "tensorfs-csi: %s: serving\n", named.c_str());
        } else {
            std::fprintf(stderr,
                         "tensorfs-csi: %s: %s; reported abnormal (VOLUME_CONDITION) until kubelet publishes it "
                         "again (requiresRepublish), which mounts it anew for the pod's next containers\n",
                         named.c_str(), health.message.c_str());
        }
    }
}

}  // namespace tensorfs::csi
