// A running daemon takes new credentials at a unix socket of its own (mount option secrets_socket=PATH), so that a
// Kubernetes volume whose Secret changed, or whose pod's service account token was renewed, uses the new ones for
// its next requests without a remount: the CSI plugin sends them there at each republish.
//
// The socket (SOCK_SEQPACKET, mode 0600, in a folder only root reaches) takes one message per connection, from the
// daemon's own user only (SO_PEERCRED): a JSON object {"mountpoint": PATH, "secrets": {NAME: VALUE, ...}}, the
// secrets as `tensorfs mount --secrets-fd` takes them (src/remote/secrets.hpp), the whole set (a name left out is
// no longer given). PATH must be the daemon's mountpoint (a socket that is another volume's refuses them). The
// answer is one message: {"changed": [NAMES]} (names only, never a value) or {"error": TEXT}. A change is logged
// by name. The secrets stay in memory: never on a command line, in an environment or in a file.
#pragma once

#include <memory>
#include <string>
#include <thread>

namespace tensorfs {

class SecretsSocket {
public:
    // Listens at `path` (an earlier daemon's socket there is replaced). Returns nullptr with `error` set when it
    // cannot. Called before the daemon forks: it inherits the socket.
    static std::unique_ptr<SecretsSocket> listen_at(const std::string& path, std::string& error);
    ~SecretsSocket();
    SecretsSocket(const SecretsSocket&) = delete;
    SecretsSocket& operator=(const SecretsSocket&) = delete;

    // Starts answering, in a thread of its own, for the mount at `mountpoint` (absolute). In the daemon, after the
    // fork; the thread blocks the signals that end a mount.
    void start(const std::string& mountpoint);

private:
    SecretsSocket(std::string path, int listener, int stop_read, int stop_write);
    void serve();
    void answer(int connection);

    const std::string path_;
    const int listener_;
    const int stop_read_;
    const int stop_write_;
    std::string mountpoint_;
    std::thread thread_;
};

}  // namespace tensorfs
