// Publishing runs `tensorfs mount`, whose daemon goes on serving the volume apart from the plugin (a plugin that
// is killed or restarted leaves every mount serving). The secrets go to it through a pipe on its standard input
// (`--secrets-fd 0`): never on a command line, in an environment or in a file.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "volume_request.hpp"

namespace tensorfs::csi {

struct MountSettings {
    std::string tensorfs;          // the tensorfs binary
    std::string cache_dir;         // the node's disk cache (--cache-dir)
    std::string disk_cache_size;   // its size (--disk-cache-size); empty: tensorfs's default
};

// Mounts `request` at its target (which exists). OK once the mount serves; else the status that says why, with
// tensorfs's own message: NOT_FOUND when the SOURCE does not exist, PERMISSION_DENIED when its server refuses the
// credentials, UNAVAILABLE when it cannot be reached,
// INVALID_ARGUMENT for a checkpoint or option that tensorfs refuses, INTERNAL when the mount itself failed.
grpc::Status run_mount(const MountSettings& settings, const PublishRequest& request);

// The words of `tensorfs mount` for `request` (without the secrets, which never are on it).
std::vector<std::string> mount_command(const MountSettings& settings, const PublishRequest& request);

}  // namespace tensorfs::csi
