// tensorfs-csi: the CSI node plugin (Identity and Node services of CSI v1, driver csi.tensorfs.io). `tensorfs csi`
// runs it (and runs it again if it dies): it is an executable of its own so that no other tensorfs process loads
// gRPC, protobuf and abseil. See `tensorfs csi --help` and the README's Kubernetes section.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "identity_service.hpp"
#include "node_service.hpp"
#include "volume_mounts.hpp"

namespace tensorfs::csi {
namespace {

struct PluginOptions {
    std::string endpoint;
    std::string socket;  // the endpoint's path
    std::string node_id;
    std::string state_dir = "/var/lib/tensorfs/csi";
    std::string local_root = "/srv/models";
    MountSettings mount{"", "/var/cache/tensorfs", "", "", true, ""};
};

int usage_error(const std::string& message) {
    std::fprintf(stderr, "tensorfs: csi: %s; try 'tensorfs csi --help'\n", message.c_str());
    return 1;
}

// SIZE as tensorfs takes it: digits and a K, M, G or T suffix.
bool is_size(const std::string& text) {
    const std::size_t digits = text.find_first_not_of("0123456789");
    if (digits == 0 || text.empty()) return false;
    return digits == std::string::npos || (digits + 1 == text.size() && std::strchr("KMGT", text[digits]) != nullptr);
}

// Fills `options` from argv (`--flag value` or `--flag=value`); returns 0, or the exit status of a usage error
// (after printing it).
int parse_arguments(const std::vector<std::string>& args, PluginOptions& options) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string flag = args[i];
        std::string value;
        if (const std::size_t equals = flag.find('='); flag.starts_with("--") && equals != std::string::npos) {
            value = flag.substr(equals + 1);
            flag.resize(equals);
        } else if (i + 1 == args.size()) {
            return usage_error(flag.starts_with("--") ? flag + " needs a value" : "unexpected argument '" + flag + "'");
        } else {
            value = args[++i];
        }
        if (flag == "--endpoint") {
            options.endpoint = value;
        } else if (flag == "--node-id") {
            options.node_id = value;
        } else if (flag == "--state-dir") {
            options.state_dir = value;
        } else if (flag == "--local-root") {
            options.local_root = value;
        } else if (flag == "--cache-dir") {
            options.mount.cache_dir = value;
        } else if (flag == "--disk-cache-size") {
            if (!is_size(value)) return usage_error("bad --disk-cache-size '" + value + "' (e.g. 100G)");
            options.mount.disk_cache_size = value;
        } else if (flag == "--holder-socket") {
            options.mount.holder_socket = value;
        } else if (flag == "--daemon-log") {
            if (value != "holder" && value != "syslog") {
                return usage_error("bad --daemon-log '" + value + "' (holder or syslog)");
            }
            options.mount.daemon_log_to_holder = value == "holder";
        } else if (flag == "--tensorfs") {
            options.mount.tensorfs = value;
        } else {
            return usage_error("unknown option '" + flag + "'");
        }
    }
    if (options.endpoint.empty()) return usage_error("--endpoint unix:///PATH/csi.sock is missing");
    if (options.node_id.empty()) return usage_error("--node-id NAME is missing");
    if (options.mount.tensorfs.empty()) return usage_error("run me as 'tensorfs csi'");
    for (const char* scheme : {"unix://", "unix:"}) {
        if (options.endpoint.starts_with(scheme)) {
            options.socket = options.endpoint.substr(std::strlen(scheme));
            break;
        }
    }
    if (!options.socket.starts_with("/")) {
        return usage_error("--endpoint '" + options.endpoint + "' is not unix:///ABSOLUTE/PATH");
    }
    options.mount.secrets_dir = std::filesystem::path(options.socket).parent_path() / "volumes";
    if (!options.mount.holder_socket.empty() && !options.mount.holder_socket.starts_with("/")) {
        return usage_error("--holder-socket '" + options.mount.holder_socket + "' is not an absolute path");
    }
    for (const std::string* folder : {&options.state_dir, &options.mount.cache_dir, &options.local_root}) {
        if (!folder->starts_with("/")) return usage_error("'" + *folder + "' is not an absolute path");
    }
    return 0;
}

// The socket of an earlier run (killed before it could remove it) is in the way of a new one.
bool clear_old_socket(const std::string& path) {
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) return errno == ENOENT;
    if (!S_ISSOCK(info.st_mode)) {
        std::fprintf(stderr, "tensorfs: csi: %s exists and is not a socket\n", path.c_str());
        return false;
    }
    return ::unlink(path.c_str()) == 0;
}

int serve(const PluginOptions& options) {
    // Only root talks to the socket, and the cache folder and the records are root's alone (a private model's
    // blocks are in that cache).
    ::umask(077);
    // With a mount holder, the cache is the holder's (its daemons write it), not in the plugin's container.
    std::error_code error;
    if (options.mount.holder_socket.empty()) std::filesystem::create_directories(options.mount.cache_dir, error);
    if (error) {
        std::fprintf(stderr, "tensorfs: csi: cannot make %s: %s\n", options.mount.cache_dir.c_str(),
                     error.message().c_str());
        return 2;
    }
    std::optional<VolumeStore> store;
    try {
        store.emplace(options.state_dir);
    } catch (const std::exception& failure) {
        std::fprintf(stderr, "tensorfs: csi: %s\n", failure.what());
        return 2;
    }
    if (!clear_old_socket(options.socket)) return 2;
    // The daemons' secrets sockets, beside the plugin's own (the holder's daemons see that folder too).
    if (std::filesystem::create_directories(options.mount.secrets_dir, error); error) {
        std::fprintf(stderr, "tensorfs: csi: cannot make %s: %s\n", options.mount.secrets_dir.c_str(),
                     error.message().c_str());
        return 2;
    }

    // SIGTERM and SIGINT end the server cleanly; blocked here so that every thread gRPC starts inherits the mask
    // and only the waiting thread below takes them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    IdentityService identity(options.mount.tensorfs, options.mount.holder_socket);
    std::error_code resolved;
    NodeService node(options.node_id, std::filesystem::weakly_canonical(options.local_root, resolved), options.mount,
                     *store);
    // Stuck daemons are ended through their FUSE connections (volume_mounts.hpp), which a container's /sys lacks.
    if (const std::string problem = ensure_fuse_connections(); !problem.empty()) {
        std::fprintf(stderr, "tensorfs-csi: %s: a volume whose reader is stuck cannot be ended at unpublish\n",
                     problem.c_str());
    }
    node.take_stock();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + options.socket, grpc::InsecureServerCredentials());
    builder.RegisterService(&identity);
    builder.RegisterService(&node);
    const std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (!server) {
        std::fprintf(stderr, "tensorfs: csi: cannot listen on %s\n", options.endpoint.c_str());
        return 2;
    }
    std::fprintf(stderr, "tensorfs-csi: %s %s serving node %s at %s\n", kDriverName, TENSORFS_VERSION,
                 options.node_id.c_str(), options.endpoint.c_str());
    std::thread stopper([&] {
        int signal = 0;
        sigwait(&stop_signals, &signal);
        // Calls under way get a moment to end; kubelet's connections are not waited for.
        server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    });
    server->Wait();
    stopper.join();
    ::unlink(options.socket.c_str());
    return 0;
}

}  // namespace
}  // namespace tensorfs::csi

int main(int argc, char** argv) {
    tensorfs::csi::PluginOptions options;
    if (const int refused = tensorfs::csi::parse_arguments({argv + 1, argv + argc}, options); refused != 0) {
        return refused;
    }
    return tensorfs::csi::serve(options);
}
