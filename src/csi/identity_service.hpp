// CSI's Identity service: who the plugin is, and whether it can mount.
#pragma once

#include <string>

#include "csi.grpc.pb.h"

namespace tensorfs::csi {

inline constexpr const char* kDriverName = "csi.tensorfs.io";

class IdentityService final : public ::csi::v1::Identity::Service {
public:
    explicit IdentityService(std::string tensorfs) : tensorfs_(std::move(tensorfs)) {}

    grpc::Status GetPluginInfo(grpc::ServerContext*, const ::csi::v1::GetPluginInfoRequest*,
                               ::csi::v1::GetPluginInfoResponse* response) override;
    grpc::Status GetPluginCapabilities(grpc::ServerContext*, const ::csi::v1::GetPluginCapabilitiesRequest*,
                                       ::csi::v1::GetPluginCapabilitiesResponse* response) override;
    // Ready when /dev/fuse opens and the tensorfs binary can be run.
    grpc::Status Probe(grpc::ServerContext*, const ::csi::v1::ProbeRequest*,
                       ::csi::v1::ProbeResponse* response) override;

private:
    std::string tensorfs_;
};

}  // namespace tensorfs::csi
