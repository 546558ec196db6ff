// CSI's Node service: publishing a volume mounts its SOURCE at the target with `tensorfs mount` (its daemon runs
// apart from the plugin), unpublishing takes the mount down within a bound, and the stats say whether the daemon
// still serves.
#pragma once

#include <filesystem>
#include <string>

#include "csi.grpc.pb.h"
#include "mount_runner.hpp"
#include "target_locks.hpp"
#include "volume_store.hpp"

namespace tensorfs::csi {

class NodeService final : public ::csi::v1::Node::Service {
public:
    NodeService(std::string node_id, std::filesystem::path local_root, MountSettings settings, VolumeStore& store)
        : node_id_(std::move(node_id)),
          local_root_(std::move(local_root)),
          settings_(std::move(settings)),
          store_(store) {}

    grpc::Status NodePublishVolume(grpc::ServerContext*, const ::csi::v1::NodePublishVolumeRequest* request,
                                   ::csi::v1::NodePublishVolumeResponse*) override;
    grpc::Status NodeUnpublishVolume(grpc::ServerContext*, const ::csi::v1::NodeUnpublishVolumeRequest* request,
                                     ::csi::v1::NodeUnpublishVolumeResponse*) override;
    grpc::Status NodeGetVolumeStats(grpc::ServerContext*, const ::csi::v1::NodeGetVolumeStatsRequest* request,
                                    ::csi::v1::NodeGetVolumeStatsResponse* response) override;
    grpc::Status NodeGetCapabilities(grpc::ServerContext*, const ::csi::v1::NodeGetCapabilitiesRequest*,
                                     ::csi::v1::NodeGetCapabilitiesResponse* response) override;
    grpc::Status NodeGetInfo(grpc::ServerContext*, const ::csi::v1::NodeGetInfoRequest*,
                             ::csi::v1::NodeGetInfoResponse* response) override;

    // At start: one line per recorded volume on stderr, serving or not; the records of targets that are no longer
    // mounted (unpublished while the plugin was down) are forgotten.
    void take_stock();

private:
    grpc::Status publish(const PublishRequest& request);
    // Records the volume published at its target in the state folder, and whether the plugin made the target.
    grpc::Status remember(const PublishRequest& request, bool made_target);
    grpc::Status unpublish(const std::string& target);

    std::string node_id_;
    std::filesystem::path local_root_;  // local SOURCEs must be under it
    MountSettings settings_;
    VolumeStore& store_;
    TargetLocks locks_;
};

}  // namespace tensorfs::csi
