#include "identity_service.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "holder_protocol.hpp"

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
    bool mountable = false;
    if (holder_socket_.empty()) {
        const int fuse = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (fuse >= 0) ::close(fuse);
        mountable = fuse >= 0;
        if (!mountable) std::fprintf(stderr, "tensorfs-csi: Probe: /dev/fuse cannot be opened: not ready\n");
    } else {
        // A connection that sends nothing is the holder's probe.
        const int holder = connect_to_holder(holder_socket_);
        if (holder >= 0) ::close(holder);
        mountable = holder >= 0;
        if (!mountable) {
            std::fprintf(stderr, "tensorfs-csi: Probe: the mount holder does not answer at %s: not ready\n",
                         holder_socket_.c_str());
        }
    }
    const bool runnable = ::access(tensorfs_.c_str(), X_OK) == 0;
    if (!runnable) std::fprintf(stderr, "tensorfs-csi: Probe: %s cannot be run: not ready\n", tensorfs_.c_str());
    response->mutable_ready()->set_value(mountable && runnable);
    return grpc::Status::OK;
}

}  // namespace tensorfs::csi
