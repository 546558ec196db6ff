#include "tensorfs/mount.hpp"

#include <malloc.h>
#include <spawn.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <thread>

#include "daemon.hpp"
#include "fuse_ops.hpp"
#include "request_loop.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/exit_signals.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/remote_source.hpp"

extern char** environ;

namespace tensorfs {
namespace {

// Threads serving reads (`threads=N`).
constexpr unsigned kDefaultThreads = 16;

// Options every tensorfs mount has: read-only, and named after its source in /proc/mounts.
std::string fixed_fuse_options(const std::string& source) {
    std::string fsname;
    for (const char c : source) {
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
    BackgroundQueue workers(options.threads ? options.threads : kDefaultThreads,
                            std::numeric_limits<std::size_t>::max(), BackgroundQueue::AtEnd::run_queued);
    filesystem.read_workers = &workers;
    const int result = run_request_loop(session);
    filesystem.read_workers = nullptr;
    return result;  // the workers answer what is queued and stop before the session goes
}

}  // namespace

int run_mount(const MountOptions& options) {
    // First: the remote layer counts into it from the moment the source is opened.
    Stats stats;
    std::unique_ptr<Catalog> catalog;
    std::unique_ptr<ModelExport> model_export;
    std::unique_ptr<Tree> tree;
    std::unique_ptr<SourceFiles> files;
    // One memory budget (cache_size): a remote source's fetched blocks (in flight, kept, queued for the disk)
    // take half of it, the decoded chunks the rest.
    const std::uint64_t budget = options.cache_size ? options.cache_size : kDefaultCacheBudget;
    const bool remote = is_remote_source(options.source);
    const std::uint64_t chunk_budget = remote ? budget - budget / 2 : budget;
    try {
        SourceOptions source_options = options.source_options;
        source_options.counters = stats.remote;
        source_options.memory_budget = budget / 2;
        catalog = std::make_unique<Catalog>(open_catalog(options.source, source_options));
        model_export = std::make_unique<ModelExport>(*catalog, options.export_dtype);
        tree = std::make_unique<Tree>(*catalog, model_export->available());
        files = std::make_unique<SourceFiles>(*catalog);
    } catch (const InvalidSource& invalid) {
        for (const auto& problem : invalid.problems()) std::fprintf(stderr, "%s\n", problem.line().c_str());
        return 1;
    }
    Content content(*catalog, *tree, *files, stats, chunk_budget, model_export.get());
    // Parsing the headers took several times the memory the tree keeps (a 100,000-tensor mount: 58 MB, 28 MB
    // after this): give the freed pages back before the daemon forks and serves for days.
    ::malloc_trim(0);

    std::uint64_t total_bytes = 0;
    for (const auto& tensor : catalog->tensors) total_bytes += tensor.nbytes;
    Filesystem filesystem{*tree, content, *files, total_bytes, files->file(0).modified(), ::getuid(), ::getgid()};

    FuseArgs args;
    args.strings = {"tensorfs", "-o", fixed_fuse_options(shown_source(options.source))};
    for (const auto& option : options.fuse_options) {
        args.strings.push_back("-o");
        args.strings.push_back(option);
    }
    if (options.debug) args.strings.push_back("-d");
    fuse_args fargs = args.make();

    const auto& ops = tensorfs_operations();
    fuse_session* session = fuse_session_new(&fargs, &ops, sizeof ops, &filesystem);
    fuse_opt_free_args(&fargs);
    if (session == nullptr) return 1;  // libfuse said which option it did not take
    if (fuse_set_signal_handlers(session) != 0) {
        fuse_session_destroy(session);
        return 2;
    }
    const std::string mountpoint = absolute_mountpoint(options.mountpoint);
    stats.mountpoint = mountpoint;
    if (fuse_session_mount(session, mountpoint.c_str()) != 0) {
        fuse_remove_signal_handlers(session);
        fuse_session_destroy(session);
        return 2;
    }
    // The mount exists now. Without -f the command's process returns once the daemon answers; with -f a helper
    // thread waits for the loop to answer to raise the read-ahead.
    if (options.foreground) {
        start_threads_blocking_exit_signals([&] { std::thread(wait_and_raise_read_ahead, mountpoint).detach(); });
        if (::chdir("/") != 0) std::perror("tensorfs: chdir /");
    } else {
        daemonize_when_mounted(mountpoint, [session] { fuse_session_unmount(session); });
    }
    const int loop_result = serve(session, filesystem, options);
    fuse_session_unmount(session);
    fuse_remove_signal_handlers(session);
    fuse_session_destroy(session);
    // The loop ends with 0 (unmounted, or stopped by a signal), or a negative errno when the device failed.
    return loop_result < 0 ? 2 : 0;
}

int run_umount(const std::string& mountpoint) {
    // A mount whose daemon died answers every access with ENOTCONN (ECONNABORTED for a request queued just as the
    // connection went down), and a plain unmount of it fails (EBUSY) while a process still holds one of its files
    // open. Nothing can be served there any more: detach it lazily.
    // statfs always reaches the daemon; stat may be answered from the kernel's cached attributes of the root.
    struct statfs filesystem {};
    const bool daemon_died =
        ::statfs(mountpoint.c_str(), &filesystem) != 0 && (errno == ENOTCONN || errno == ECONNABORTED);
    const char* argv[] = {"fusermount3", daemon_died ? "-uz" : "-u", mountpoint.c_str(), nullptr};
    pid_t pid;
    if (posix_spawnp(&pid, "fusermount3", nullptr, nullptr, const_cast<char**>(argv), environ) != 0) {
        std::fprintf(stderr, "tensorfs: cannot run fusermount3\n");
        return 2;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2;
}

}  // namespace tensorfs
