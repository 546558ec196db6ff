// Publishing runs `tensorfs mount`, whose daemon goes on serving the volume apart from the plugin. With a mount
// holder (--holder-socket: the Kubernetes deployment), the holder runs it, so that the daemon is in the holder's
// container and outlives the plugin's container (holder_protocol.hpp); without one, the plugin runs it itself (a
// plugin process that is killed or restarted leaves every mount serving, its container not). The secrets go to it
// through a pipe on its standard input (`--secrets-fd 0`): never on a command line, in an environment or in a file.
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
    std::string holder_socket;     // the mount holder's socket (--holder-socket); empty: no holder
    bool daemon_log_to_holder = true;  // the daemons log to the holder's stderr (else syslog: --daemon-log=syslog)
    // Where the daemons of remote volumes listen for new secrets (secrets_socket=): a folder that the plugin and
    // the daemons both see (the holder's socket's, /csi/volumes in the manifests); empty: nowhere.
    std::string secrets_dir;
};

// The secrets socket of the daemon of the volume at `target`: SECRETS_DIR/HASH.sock; empty without a folder.
std::string secrets_socket_of(const MountSettings& settings, const std::string& target);

// Republish of a serving volume: its daemon takes the request's secrets (the whole set: a key no longer in the
// Secret is no longer used) at its secrets socket, for its next requests. OK also when it changed nothing; OK with
// a line in the log when the daemon has no socket (mounted by a tensorfs before it had one: the secrets apply when
// its pod restarts); else UNAVAILABLE or INTERNAL with the daemon's words.
grpc::Status give_secrets_to_daemon(const MountSettings& settings, const PublishRequest& request);

// Mounts `request` at its target (which exists). OK once the mount serves; else the status that says why, with
// tensorfs's own message: NOT_FOUND when the SOURCE does not exist, PERMISSION_DENIED when its server refuses the
// credentials, UNAVAILABLE when it cannot be reached,
// INVALID_ARGUMENT for a checkpoint or option that tensorfs refuses, INTERNAL when the mount itself failed.
grpc::Status run_mount(const MountSettings& settings, const PublishRequest& request);

// The words of `tensorfs mount` for `request` (without the secrets, which never are on it). With a holder, the
// daemon's log goes to the holder's stderr and names the volume (log_fd=, log_id=). The daemon knows it serves a
// Kubernetes volume (csi_volume=: its messages say what to do in Kubernetes terms), and a remote one listens for new
// secrets (secrets_socket=).
std::vector<std::string> mount_command(const MountSettings& settings, const PublishRequest& request);

}  // namespace tensorfs::csi
