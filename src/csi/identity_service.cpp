#include "identity_service.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace tensorfs::csi {

grpc::Status IdentityService::GetPluginInfo(grpc::ServerContext*, const ::csi::v1::GetPluginInfoRequest*,
                                            ::csi::v1::GetPluginInfoResponse* response) {
    response->set_name(kDriverName);
    response->set_vendor_version(TENSORFS_VERSION);
    return grpc::Status::OK;
}

// No controller service: volumes are not provisioned or attached, they name a SOURCE.
grpc::Status IdentityService::GetPluginCapabilities(grpc::ServerContext*,
                                                    const ::csi::v1::GetPluginCapabilitiesRequest*,
                                                    ::csi::v1::GetPluginCapabilitiesResponse*) {
    return grpc::Status::OK;
}

grpc::Status IdentityService::Probe(grpc::ServerContext*, const ::csi::v1::ProbeRequest*,
                                    ::csi::v1::ProbeResponse* response) {
    const int fuse = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fuse >= 0) ::close(fuse);
    const bool runnable = ::access(tensorfs_.c_str(), X_OK) == 0;
    if (fuse < 0) std::fprintf(stderr, "tensorfs-csi: Probe: /dev/fuse cannot be opened: not ready\n");
    if (!runnable) std::fprintf(stderr, "tensorfs-csi: Probe: %s cannot be run: not ready\n", tensorfs_.c_str());
    response->mutable_ready()->set_value(fuse >= 0 && runnable);
    return grpc::Status::OK;
}

}  // namespace tensorfs::csi
