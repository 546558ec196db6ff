// tensorfs-holder: the mount holder of the Kubernetes deployment, a DaemonSet of its own (deploy/kubernetes/
// holder.yaml). It is the parent of every volume's daemon on its node, so that a restart, a crash, an OOM kill or
// an upgrade of the CSI plugin's container stops no volume: the daemons are not in that container.
//
// It is kept as small as it can be, so that it rarely needs an update (docs/kubernetes.md says what one means): it
// knows nothing of CSI, of gRPC or of FUSE. It runs what the plugin asks (`tensorfs mount`, from the binary the
// plugin hands over: the daemons are the plugin's version), reaps every process, writes one line per event to its
// stderr (the container's log), where the daemons write theirs, and on SIGTERM asks its daemons to end before it
// ends. The protocol: holder_protocol.hpp.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "holder_protocol.hpp"

namespace tensorfs::csi {
namespace {

struct HolderOptions {
    std::string socket;
    int grace_seconds = 25;  // on SIGTERM: how long the daemons may take to end (kubelet's default grace is 30 s)
};

// A `tensorfs mount` under way: its connection gets the answer when it ends.
struct Pending {
    int connection = -1;
    std::string volume;
    std::string source;
    std::string target;
};

// A daemon that serves a volume.
struct Daemon {
    std::string volume;
    std::string source;
};

void say(const std::string& line) {
    std::fprintf(stderr, "tensorfs-holder: %s\n", line.c_str());
    std::fflush(stderr);
}

std::string ending_of(int status) {
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("signal ") + std::to_string(WTERMSIG(status)) + " (" +
                                    strsignal(WTERMSIG(status)) + ")";
    return "status " + std::to_string(status);
}

int usage_error(const std::string& message) {
    std::fprintf(stderr,
                 "tensorfs-holder: %s\nusage: tensorfs-holder --socket PATH [--grace SECONDS]\n", message.c_str());
    return 1;
}

int parse_arguments(const std::vector<std::string>& args, HolderOptions& options) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string flag = args[i];
        std::string value;
        if (const std::size_t equals = flag.find('='); flag.starts_with("--") && equals != std::string::npos) {
            value = flag.substr(equals + 1);
            flag.resize(equals);
        } else if (i + 1 < args.size()) {
            value = args[++i];
        } else {
            return usage_error(flag + " needs a value");
        }
        if (flag == "--socket") {
            options.socket = value;
        } else if (flag == "--grace") {
            try {
                options.grace_seconds = std::stoi(value);
            } catch (const std::exception&) {
                return usage_error("bad --grace '" + value + "'");
            }
        } else {
            return usage_error("unknown option '" + flag + "'");
        }
    }
    if (!options.socket.starts_with("/")) return usage_error("--socket /ABSOLUTE/PATH is missing");
    return 0;
}

int listen_at(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof address.sun_path) return -1;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    struct stat info {};
    if (::lstat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode)) ::unlink(path.c_str());  // an earlier run's
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 || ::chmod(path.c_str(), 0600) ||
        ::listen(fd, 64) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// In the child: the request's descriptors in their places, then the plugin's tensorfs. Never returns.
[[noreturn]] void run_child(const std::vector<int>& fds, const std::vector<std::string>& args,
                            const std::vector<std::string>& env) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    // Out of the way of 0 to 4 first, then into place: 0 the secrets, 1 nothing, 2 the plugin's pipe, 3 the log.
    const int binary = ::fcntl(fds[0], F_DUPFD_CLOEXEC, 10);
    const int input = ::fcntl(fds[1], F_DUPFD, 10);
    const int said = ::fcntl(fds[2], F_DUPFD, 10);
    const int log = ::fcntl(STDERR_FILENO, F_DUPFD, 10);
    const int null = ::open("/dev/null", O_RDWR);
    if (binary < 0 || input < 0 || said < 0 || log < 0 || null < 0) ::_exit(126);
    ::dup2(input, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(said, STDERR_FILENO);
    ::dup2(log, kHolderLogFd);
    ::dup2(binary, kHolderLogFd + 1);
    ::fcntl(kHolderLogFd + 1, F_SETFD, FD_CLOEXEC);  // an ELF binary runs from a close-on-exec descriptor
    ::close_range(kHolderLogFd + 2, ~0U, 0);
    ::setsid();
    std::vector<char*> argv;
    for (const auto& word : args) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const auto& word : env) envp.push_back(const_cast<char*>(word.c_str()));
    envp.push_back(nullptr);
    ::fexecve(kHolderLogFd + 1, argv.data(), envp.data());
    const std::string message =
        std::string("tensorfs-holder: cannot run the plugin's tensorfs: ") + std::strerror(errno) + "\n";
    const ssize_t written = ::write(STDERR_FILENO, message.data(), message.size());
    static_cast<void>(written);
    ::_exit(127);
}

class Holder {
public:
    explicit Holder(HolderOptions options) : options_(std::move(options)) {}

    int run() {
        ::umask(077);
        ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // the daemons come back to it when `tensorfs mount` exits
        ::signal(SIGPIPE, SIG_IGN);
        sigset_t handled;
        sigemptyset(&handled);
        for (const int signal : {SIGCHLD, SIGTERM, SIGINT}) sigaddset(&handled, signal);
        ::sigprocmask(SIG_BLOCK, &handled, nullptr);
        signals_ = ::signalfd(-1, &handled, SFD_CLOEXEC);
        listener_ = listen_at(options_.socket);
        if (signals_ < 0 || listener_ < 0) {
            say("cannot listen at " + options_.socket + ": " + std::strerror(errno));
            return 2;
        }
        say("holding the volumes' daemons of this node; listening at " + options_.socket);
        while (!stopping_) {
            pollfd ready[2] = {{listener_, POLLIN, 0}, {signals_, POLLIN, 0}};
            if (::poll(ready, 2, -1) < 0) continue;
            if (ready[1].revents & POLLIN) take_signals();
            if (!stopping_ && (ready[0].revents & POLLIN)) take_request();
        }
        return stop();
    }

private:
    void take_signals() {
        signalfd_siginfo info{};
        while (::read(signals_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
            if (info.ssi_signo == SIGCHLD) {
                reap();
            } else {
                say(std::string("asked to stop (") + strsignal(static_cast<int>(info.ssi_signo)) +
                    "): the daemons end, and with them the node's volumes");
                stopping_ = true;
            }
            if (!has_more_signals()) break;
        }
    }

    bool has_more_signals() const {
        pollfd more{signals_, POLLIN, 0};
        return ::poll(&more, 1, 0) > 0;
    }

    void take_request() {
        const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (connection < 0) return;
        // A client that connects and says nothing must not hold the holder.
        const timeval limit{5, 0};
        ::setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
        std::string text;
        std::vector<int> fds;
        const int error = receive_message(connection, text, fds);
        auto refuse = [&](const std::string& why) {
            say("refused a request: " + why);
            send_message(connection, nlohmann::json{{"error", why}}.dump(), {});
        };
        if (error == 0 && text.empty()) {
            // A probe: the holder answers.
        } else if (error != 0) {
            refuse(std::string("cannot read it: ") + std::strerror(error));
        } else if (fds.size() != static_cast<std::size_t>(kHolderFds)) {
            refuse("it has " + std::to_string(fds.size()) + " descriptors, not " + std::to_string(kHolderFds));
        } else {
            start(connection, text, fds);
            for (const int fd : fds) ::close(fd);
            return;  // the connection is answered when the command ends
        }
        for (const int fd : fds) ::close(fd);
        ::close(connection);
    }

    void start(int connection, const std::string& text, const std::vector<int>& fds) {
        const nlohmann::json request = nlohmann::json::parse(text, nullptr, false);
        Pending pending{connection, "", "", ""};
        std::vector<std::string> args;
        std::vector<std::string> env;
        try {
            pending.volume = request.at("volume").get<std::string>();
            pending.source = request.at("source").get<std::string>();
            pending.target = request.at("target").get<std::string>();
            args = request.at("args").get<std::vector<std::string>>();
            env = request.at("env").get<std::vector<std::string>>();
        } catch (const nlohmann::json::exception&) {
            say("refused a request: not a request of tensorfs-csi");
            send_message(connection, nlohmann::json{{"error", "not a request of tensorfs-csi"}}.dump(), {});
            ::close(connection);
            return;
        }
        if (args.empty()) args.push_back("tensorfs");
        const pid_t pid = ::fork();
        if (pid == 0) run_child(fds, args, env);
        if (pid < 0) {
            const std::string why = std::string("fork: ") + std::strerror(errno);
            say("volume " + pending.volume + ": " + why);
            send_message(connection, nlohmann::json{{"error", why}}.dump(), {});
            ::close(connection);
            return;
        }
        say("volume " + pending.volume + " (" + pending.source + "): mounting at " + pending.target + " (pid " +
            std::to_string(pid) + ")");
        pending_[pid] = std::move(pending);
    }

    void reap() {
        for (;;) {
            int status = 0;
            const pid_t pid = ::waitpid(-1, &status, WNOHANG);
            if (pid <= 0) break;
            if (const auto found = pending_.find(pid); found != pending_.end()) {
                Pending done = std::move(found->second);
                pending_.erase(found);
                send_message(done.connection, nlohmann::json{{"status", status}}.dump(), {});
                ::close(done.connection);
                if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                    adopt(done);
                } else {
                    say("volume " + done.volume + " (" + done.source + "): the mount failed (" + ending_of(status) +
                        ")");
                }
            } else if (const auto daemon = daemons_.find(pid); daemon != daemons_.end()) {
                say("volume " + daemon->second.volume + " (" + daemon->second.source + "): its daemon (pid " +
                    std::to_string(pid) + ") ended: " + ending_of(status));
                daemons_.erase(daemon);
            }
        }
    }

    // The daemon of a mount that succeeded is now the holder's child: the one whose command line names the target.
    void adopt(const Pending& done) {
        for (const pid_t pid : children()) {
            if (daemons_.count(pid) != 0 || pending_.count(pid) != 0) continue;
            std::ifstream file("/proc/" + std::to_string(pid) + "/cmdline");
            std::string word;
            bool names_target = false;
            while (std::getline(file, word, '\0')) names_target = names_target || word == done.target;
            if (!names_target) continue;
            daemons_[pid] = Daemon{done.volume, done.source};
            say("volume " + done.volume + " (" + done.source + "): serving at " + done.target + " (daemon pid " +
                std::to_string(pid) + ")");
            return;
        }
        say("volume " + done.volume + " (" + done.source + "): mounted at " + done.target);
    }

    static std::vector<pid_t> children() {
        std::vector<pid_t> pids;
        const std::string self = std::to_string(::getpid());
        std::ifstream file("/proc/" + self + "/task/" + self + "/children");
        for (pid_t pid; file >> pid;) pids.push_back(pid);
        return pids;
    }

    // SIGTERM: every daemon is asked to end (each writes what it holds to the disk cache and unmounts), for up to
    // the grace; what is left ends with the holder (process 1 of its container).
    int stop() {
        ::close(listener_);
        ::unlink(options_.socket.c_str());
        for (const pid_t pid : children()) ::kill(pid, SIGTERM);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options_.grace_seconds);
        while (!children().empty() && std::chrono::steady_clock::now() < deadline) {
            pollfd ready{signals_, POLLIN, 0};
            ::poll(&ready, 1, 100);
            signalfd_siginfo info{};
            while (::read(signals_, &info, sizeof info) > 0 && has_more_signals()) {
            }
            reap();
        }
        const auto left = children().size();
        say(left == 0 ? "every daemon ended; stopping" : std::to_string(left) + " daemons still running; stopping");
        return 0;
    }

    HolderOptions options_;
    int signals_ = -1;
    int listener_ = -1;
    bool stopping_ = false;
    std::map<pid_t, Pending> pending_;
    std::map<pid_t, Daemon> daemons_;
};

}  // namespace
}  // namespace tensorfs::csi

int main(int argc, char** argv) {
    tensorfs::csi::HolderOptions options;
    if (const int refused = tensorfs::csi::parse_arguments({argv + 1, argv + argc}, options); refused != 0) {
        return refused;
    }
    return tensorfs::csi::Holder(std::move(options)).run();
}
