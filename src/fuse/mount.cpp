#include "tensorfs/mount.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon.hpp"
#include "fuse_ops.hpp"
#include "tensorfs/mount_failure.hpp"
#include "remote/log.hpp"
#include "remote/secrets.hpp"
#include "request_loop.hpp"
#include "secrets_socket.hpp"
#include "tensorfs/engine.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/exit_signals.hpp"
#include "tensorfs/remote_source.hpp"

extern char** environ;

namespace tensorfs {
namespace {

// Threads serving reads (`threads=N`).
constexpr unsigned kDefaultThreads = 16;

// The largest read the kernel sends, unless max_read=N says otherwise: 1 MiB less 32 KiB, so that a reply from the
// disk cache's files, with its header and a few pieces, fits the 1 MiB pipe through which libfuse splices it (a
// process without CAP_SYS_RESOURCE cannot make a pipe larger than /proc/sys/fs/pipe-max-size, 1 MiB by default).
// With 1 MiB reads, libfuse read every such reply into a buffer and copied it from there.
constexpr unsigned kDefaultMaxRead = (1u << 20) - (32u << 10);

// The max_read=N among the options libfuse takes, else the default: init() must tell libfuse the same.
unsigned max_read_of(const std::vector<std::string>& fuse_options) {
    constexpr std::string_view kName = "max_read=";
    unsigned max_read = kDefaultMaxRead;
    for (const auto& option : fuse_options) {
        if (!option.starts_with(kName)) continue;
        // libfuse itself refuses a value that is not a number.
        std::from_chars(option.data() + kName.size(), option.data() + option.size(), max_read);
    }
    return max_read;
}

// The kernel's read-ahead for the mount: a whole number of max_read requests, about 1 MiB, so that each window
// reaches the server as whole requests (a window of 1 MiB with 992 KiB reads came as a read and a 32 KiB one after
// it, which looked like a sequential reader and opened the remote read-ahead for one random touch).
unsigned read_ahead_kb(unsigned max_read) {
    const unsigned requests = std::max(1u, (1u << 20) / std::max(max_read, 4096u));
    return requests * std::max(max_read, 4096u) / 1024;
}

// log_fd=N: the daemon's stderr becomes N (a Kubernetes mount holder's own stderr: the container's log), and its
// warnings go there alone, each naming the volume (log_id=) and the SOURCE. Never a secret: the SOURCE is shown
// as in /proc/mounts, without a password.
void use_log_descriptor(const MountOptions& options) {
    if (::fcntl(options.settings.log_fd, F_GETFD) < 0) return;  // not open: keep the usual log
    ::dup2(options.settings.log_fd, STDERR_FILENO);
    ::close(options.settings.log_fd);
    const std::string source = shown_source(options.source);
    const std::string& id = options.settings.log_id;
    remote::log_to_stderr_only(id.empty() ? source : "volume " + id + " (" + source + ")");
}

// Options every tensorfs mount has: read-only, and named after its source in /proc/mounts.
std::string fixed_fuse_options(const std::string& source) {
    // A local SOURCE absolute, so that `tensorfs status`, `ls` and `info` find it from any folder.
    const std::string named =
        is_remote_source(source) ? source : std::filesystem::absolute(source).lexically_normal().string();
    std::string fsname;
    for (const char c : named) {
        if (c == ',' || c == '\\') fsname += '\\';  // libfuse's option parser treats ',' as a separator
        fsname += c;
    }
    return "ro,subtype=tensorfs,fsname=" + fsname;
}

struct FuseArgs {
    std::vector<std::string> strings;
    std::vector<char*> pointers;

    fuse_args make() {
        pointers.clear();
        for (auto& s : strings) pointers.push_back(s.data());
        return FUSE_ARGS_INIT(static_cast<int>(pointers.size()), pointers.data());
    }
};

// Resolved before mounting: afterwards, resolving it would wait for the mount to answer.
std::string absolute_mountpoint(const std::string& mountpoint) {
    char* resolved = ::realpath(mountpoint.c_str(), nullptr);
    if (resolved == nullptr) return mountpoint;
    std::string path(resolved);
    std::free(resolved);
    return path;
}

// One thread (request_loop.hpp) takes every request and answers all but reads itself; reads go to a pool of
// workers (op_read), so that other requests and other readers never wait behind one that takes long (decoding,
// page faults in the source, a remote source).
//
// Why not libfuse's multithreaded loop: all its idle threads wait in read() on /dev/fuse, and the kernel wakes
// them in turn, so a stream of small requests (a walk: lookup, readdirplus, getattr, each a few microseconds of
// work) hops from thread to thread and often to the other CPU. One thread that answers them itself and goes
// straight back to read() halved the time of a first `find` over 10,000 tensor folders, and its CPU time (the
// figures are in docs/benchmarks.md).
int serve(fuse_session* session, Filesystem& filesystem, const MountOptions& options) {
    if (options.single_threaded) return run_request_loop(session);
    BackgroundQueue workers(options.settings.threads ? options.settings.threads : kDefaultThreads,
                            std::numeric_limits<std::size_t>::max(), BackgroundQueue::AtEnd::run_queued);
    filesystem.read_workers = &workers;
    const int result = run_request_loop(session);
    filesystem.read_workers = nullptr;
    return result;  // the workers answer what is queued and stop before the session goes
}

// Every shard and every file of source/ stays open for the life of the mount: a folder of a few thousand files
// needs more descriptors than the usual soft limit of 1024. The hard limit is the user's to give.
void raise_open_files_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
}

// A readahead= that the memory budget cuts (remote_context.hpp) is told, rather than silently taken as less.
void warn_if_readahead_cut(const Engine& engine) {
    const std::optional<std::uint64_t> limit = engine.readahead_cut();
    if (!limit) return;
    const auto mib = [](std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
    std::fprintf(stderr,
                 "tensorfs: warning: readahead=%gM is cut to %gM, the most that cache_size=%gM allows; raise "
                 "cache_size for more\n",
                 mib(engine.settings().source.readahead), mib(*limit), mib(engine.settings().budget()));
}

// A mount for the CSI plugin says why it failed in the form made for it (mount_failure.hpp).
int say_failure(const MountFailure& failure) {
    std::fprintf(stderr, "%s\n", failure_record(failure).c_str());
    return 1;
}

}  // namespace

int run_mount(const MountOptions& options) {
    // Messages about credentials say what to do in Kubernetes terms from the first request on.
    if (!options.settings.csi_volume.empty()) remote::set_kubernetes_volume(options.settings.csi_volume);
    raise_open_files_limit();
    std::unique_ptr<Engine> engine;
    try {
        EngineNeeds needs;
        needs.folder = true;
        needs.export_dtype = options.settings.export_dtype;
        needs.mount_root = true;
        engine = std::make_unique<Engine>(options.source, options.settings, needs);
    } catch (const SourceError& refused) {
        if (!options.settings.csi_volume.empty()) {
            return say_failure({refused.kind(), "tensorfs: " + refused.summary()});
        }
        for (const auto& problem : refused.problems()) std::fprintf(stderr, "%s\n", problem.line().c_str());
        return 1;
    } catch (const IoError& failed) {
        const std::string message = "tensorfs: " + single_line(failed.what());
        if (!options.settings.csi_volume.empty()) return say_failure({failed.kind(), message});
        std::fprintf(stderr, "%s\n", message.c_str());
        return 1;
    }
    if (engine->settings().readahead_given) warn_if_readahead_cut(*engine);
    if (!engine->candidates().empty()) {
        std::fprintf(stderr, "tensorfs: %s: %s (the mount shows no tensors and no model.safetensors)\n",
                     shown_source(options.source).c_str(), engine->several_models("-o model=PATH").c_str());
    }
    // Parsing the headers took several times the memory the tree keeps (a 100,000-tensor mount: 58 MB, 28 MB
    // after this): give the freed pages back before the daemon forks and serves for days.
    ::malloc_trim(0);
    Filesystem filesystem{*engine, engine->total_bytes(), engine->modified(), ::getuid(), ::getgid()};

    FuseArgs args;
    filesystem.max_read = max_read_of(options.fuse_options);
    args.strings = {"tensorfs", "-o", fixed_fuse_options(shown_source(options.source)), "-o",
                    "max_read=" + std::to_string(kDefaultMaxRead)};
    for (const auto& option : options.fuse_options) {
        args.strings.push_back("-o");
        args.strings.push_back(option);
    }
    if (options.debug) args.strings.push_back("-d");
    fuse_args fargs = args.make();

    // Made before the mount, so that a problem with it is the command's error, and inherited by the daemon: it is
    // there as soon as `tensorfs mount` returns.
    std::unique_ptr<SecretsSocket> secrets_socket;
    if (!options.settings.secrets_socket.empty()) {
        std::string problem;
        secrets_socket = SecretsSocket::listen_at(options.settings.secrets_socket, problem);
        if (!secrets_socket) {
            std::fprintf(stderr, "tensorfs: %s\n", problem.c_str());
            return 2;
        }
    }

    const auto& ops = tensorfs_operations();
    fuse_session* session = fuse_session_new(&fargs, &ops, sizeof ops, &filesystem);
    fuse_opt_free_args(&fargs);
    if (session == nullptr) return 1;  // libfuse said which option it did not take
    if (fuse_set_signal_handlers(session) != 0) {
        fuse_session_destroy(session);
        return 2;
    }
    const std::string mountpoint = absolute_mountpoint(options.mountpoint);
    Stats& stats = engine->stats();
    stats.mountpoint = mountpoint;
    stats.source = shown_source(options.source);
    stats.started_unix_seconds = static_cast<std::int64_t>(::time(nullptr));
    if (fuse_session_mount(session, mountpoint.c_str()) != 0) {
        fuse_remove_signal_handlers(session);
        fuse_session_destroy(session);
        return 2;
    }
    // The mount exists now. Without -f the command's process returns once the daemon answers; with -f a helper
    // thread waits for the loop to answer to raise the read-ahead.
    if (options.foreground) {
        start_threads_blocking_exit_signals([&] {
            std::thread(wait_and_raise_read_ahead, mountpoint, read_ahead_kb(filesystem.max_read)).detach();
        });
        if (::chdir("/") != 0) std::perror("tensorfs: chdir /");
    } else {
        daemonize_when_mounted(mountpoint, read_ahead_kb(filesystem.max_read),
                               [session] { fuse_session_unmount(session); });
    }
    if (options.settings.log_fd >= 0) use_log_descriptor(options);
    if (secrets_socket) secrets_socket->start(mountpoint);
    const int loop_result = serve(session, filesystem, options);
    secrets_socket.reset();
    fuse_session_unmount(session);
    fuse_remove_signal_handlers(session);
    fuse_session_destroy(session);
    // The loop ends with 0 (unmounted, or stopped by a signal), or a negative errno when the device failed.
    return loop_result < 0 ? 2 : 0;
}

namespace {

struct FusermountResult {
    bool unmounted = false;
    std::string said;  // what fusermount3 wrote to stderr
};

// Runs `fusermount3 FLAG MOUNTPOINT`, keeping its own words ("fusermount3: failed to unmount DIR: Device or
// resource busy") to say them as ours.
std::optional<FusermountResult> run_fusermount(const char* flag, const std::string& mountpoint) {
    const char* argv[] = {"fusermount3", flag, mountpoint.c_str(), nullptr};
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        std::perror("tensorfs: pipe");
        return std::nullopt;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    pid_t pid;
    const int spawned = posix_spawnp(&pid, "fusermount3", &actions, nullptr, const_cast<char**>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[1]);
    if (spawned != 0) {
        ::close(pipe_fds[0]);
        std::fprintf(stderr, "tensorfs: cannot run fusermount3\n");
        return std::nullopt;
    }
    FusermountResult result;
    char buffer[512];
    for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        result.said.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(pipe_fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.unmounted = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return result;
}

// How long a busy mount is tried again. Any process that reads a mount's file holds the mount for that moment:
// `tensorfs status`, run anywhere on the machine, reads every mount's stats.json. Two seconds outlast such a read
// on a loaded machine; a file a program keeps open stays busy, and is reported.
constexpr auto kBusyRetryTime = std::chrono::seconds(2);
constexpr auto kBusyRetryPause = std::chrono::milliseconds(50);

// How long a read of the mount may wait for the network (its timeout=, as its stats.json says, which the daemon
// answers at once): a reader held by a server that went away gets its error by then, and lets the mount go. Zero
// for a local source, or when the counters cannot be read.
std::chrono::milliseconds read_timeout_of(const std::string& mountpoint) {
    std::ifstream file(std::filesystem::path(mountpoint) / ".tensorfs" / "stats.json");
    const auto stats = nlohmann::json::parse(file, nullptr, false);
    const nlohmann::json::json_pointer timeout("/remote/timeout_ms");
    if (stats.is_discarded() || !stats.contains(timeout) || !stats[timeout].is_number_integer()) return {};
    return std::chrono::milliseconds(std::max<std::int64_t>(0, stats[timeout].get<std::int64_t>()));
}

}  // namespace

int run_umount(const std::string& mountpoint) {
    // A mount whose daemon died answers every access with ENOTCONN (ECONNABORTED for a request queued just as the
    // connection went down), and a plain unmount of it fails (EBUSY) while a process still holds one of its files
    // open. Nothing can be served there any more: detach it lazily.
    // statfs always reaches the daemon; stat may be answered from the kernel's cached attributes of the root.
    struct statfs filesystem {};
    const bool daemon_died =
        ::statfs(mountpoint.c_str(), &filesystem) != 0 && (errno == ENOTCONN || errno == ECONNABORTED);
    const auto started = std::chrono::steady_clock::now();
    auto give_up = started + kBusyRetryTime;
    bool asked_for_timeout = false;
    for (;;) {
        const auto result = run_fusermount(daemon_died ? "-uz" : "-u", mountpoint);
        if (!result) return 2;
        if (result->unmounted) return 0;
        std::string said = result->said;
        if (said.find("busy") == std::string::npos) {
            while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
            if (said.starts_with("fusermount3: ")) said.erase(0, std::string_view("fusermount3: ").size());
            std::fprintf(stderr, "tensorfs: %s: %s\n", mountpoint.c_str(),
                         said.empty() ? "cannot unmount" : said.c_str());
            return 2;
        }
        if (!asked_for_timeout && !daemon_died) {
            // A reader waiting for a remote source holds the mount until its read times out.
            asked_for_timeout = true;
            give_up = std::max(give_up, started + read_timeout_of(mountpoint) + kBusyRetryTime);
        }
        if (std::chrono::steady_clock::now() >= give_up) {
            std::fprintf(stderr, "tensorfs: %s: busy: files are still open under %s\n", mountpoint.c_str(),
                         mountpoint.c_str());
            return 2;
        }
        std::this_thread::sleep_for(kBusyRetryPause);
    }
}

}  // namespace tensorfs
