// `tensorfs csi --endpoint unix:///PATH/csi.sock --node-id NAME [--state-dir DIR] [--cache-dir DIR]
//               [--disk-cache-size SIZE] [--local-root DIR]`: runs the CSI node plugin, tensorfs-csi (src/csi), and keeps it running.
//
// The plugin is an executable of its own (no other tensorfs process loads gRPC). This process stays as its parent:
// it passes SIGTERM and SIGINT on, starts the plugin again when it dies of anything else (a crash, SIGKILL), and
// adopts the mounts' daemons (a child subreaper), reaping them when they end. In a container it is process 1, so a
// plugin that dies takes neither the container nor the daemons, which serve the published volumes, with it.
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.hpp"

namespace tensorfs::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kPlugin = "tensorfs-csi";
// A plugin that dies sooner than this after its start is started again after a pause that doubles each time.
constexpr auto kHealthyRun = std::chrono::seconds(60);
constexpr auto kFirstPause = std::chrono::milliseconds(1000);
constexpr auto kLongestPause = std::chrono::milliseconds(30000);

std::filesystem::path own_binary() {
    std::error_code error;
    return std::filesystem::read_symlink("/proc/self/exe", error);
}

// Beside this binary (a build folder), else where the package installs it (cmake/csi.cmake).
std::filesystem::path plugin_binary(const std::filesystem::path& self, std::string& looked_at) {
    const std::filesystem::path folder = self.parent_path();
    for (const auto& candidate : {folder / kPlugin, (folder / TENSORFS_PLUGIN_FROM_BIN / kPlugin).lexically_normal()}) {
        looked_at += (looked_at.empty() ? "" : ", ") + candidate.string();
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return {};
}

pid_t start_plugin(const std::filesystem::path& plugin, const std::vector<std::string>& words,
                   const sigset_t& original_mask) {
    std::vector<char*> argv;
    for (const auto& word : words) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    // The plugin ends with this process (a new `tensorfs csi` must find the socket free).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);
    ::sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    ::execv(plugin.c_str(), argv.data());
    std::fprintf(stderr, "tensorfs: csi: cannot run %s: %s\n", plugin.c_str(), std::strerror(errno));
    ::_exit(127);
}

}  // namespace

int csi_command(const Arguments& args) {
    const std::filesystem::path self = own_binary();
    std::string looked_at;
    const std::filesystem::path plugin = plugin_binary(self, looked_at);
    if (plugin.empty()) return failure("csi: the plugin is not installed (looked for " + looked_at + ")");
    std::vector<std::string> words = {plugin.string(), "--tensorfs", self.string()};
    words.insert(words.end(), args.begin(), args.end());

    // Signals are taken one at a time below; the plugin gets the mask this process started with.
    sigset_t handled;
    sigset_t original;
    sigemptyset(&handled);
    for (const int signal : {SIGTERM, SIGINT, SIGCHLD}) sigaddset(&handled, signal);
    ::sigprocmask(SIG_BLOCK, &handled, &original);
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);

    auto pause = kFirstPause / 2;  // doubled before the first pause
    auto started = Clock::now();
    pid_t running = start_plugin(plugin, words, original);
    if (running < 0) return failure(std::string("csi: fork: ") + std::strerror(errno));
    bool stopping = false;
    for (;;) {
        siginfo_t info{};
        if (::sigwaitinfo(&handled, &info) < 0) continue;
        if (info.si_signo != SIGCHLD) {
            stopping = true;
            ::kill(running, info.si_signo);
            continue;
        }
        // Reap everything that ended: the plugin, or adopted daemons whose mounts went.
        for (int status = 0;;) {
            const pid_t ended = ::waitpid(-1, &status, WNOHANG);
            if (ended <= 0) break;
            if (ended != running) continue;
            if (stopping || WIFEXITED(status)) return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
            const auto ran = Clock::now() - started;
            pause = ran >= kHealthyRun ? kFirstPause : std::min(pause * 2, kLongestPause);
            std::fprintf(stderr, "tensorfs: csi: the plugin ended by signal %d (%s); starting it again in %.1f s\n",
                         WTERMSIG(status), strsignal(WTERMSIG(status)), static_cast<double>(pause.count()) / 1000);
            // The pause, unless asked to stop meanwhile.
            const timespec wait{static_cast<time_t>(pause.count() / 1000), (pause.count() % 1000) * 1000000};
            sigset_t stop;
            sigemptyset(&stop);
            sigaddset(&stop, SIGTERM);
            sigaddset(&stop, SIGINT);
            if (::sigtimedwait(&stop, &info, &wait) > 0) return 0;
            started = Clock::now();
            running = start_plugin(plugin, words, original);
            if (running < 0) return failure(std::string("csi: fork: ") + std::strerror(errno));
        }
    }
}

}  // namespace tensorfs::cli
