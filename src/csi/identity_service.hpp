// CSI's Identity service: who the plugin is, and whether it can mount.
#pragma once

#include <string>

#include "csi.grpc.pb.h"

namespace tensorfs::csi {

inline constexpr const char* kDriverName = "csi.tensorfs.io";

class IdentityService final : public ::csi::v1::Identity::Service {
public:
    IdentityService(std::string tensorfs, std::string holder_socket)
        : tensorfs_(std::move(tensorfs)), holder_socket_(std::move(holder_socket)) {}

    grpc::Status GetPluginInfo(grpc::ServerContext*, const ::csi::v1::GetPluginInfoRequest*,
                               ::csi::v1::GetPluginInfoResponse* response) override;
    grpc::Status GetPluginCapabilities(grpc::ServerContext*, const ::csi::v1::GetPluginCapabilitiesRequest*,
                                       ::csi::v1::GetPluginCapabilitiesResponse* response) override;
    // Ready when the tensorfs binary can be run and the mounts can be made: the mount holder answers at its socket
    // (with --holder-socket), else /dev/fuse opens.
    grpc::Status Probe(grpc::ServerContext*, const ::csi::v1::ProbeRequest*,
                       ::csi::v1::ProbeResponse* response) override;

private:
    std::string tensorfs_;
    std::string holder_socket_;
};

}  // namespace tensorfs::csi
