#include "mount_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/socket.h>

#include <string_view>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "holder_protocol.hpp"
#include "tensorfs/mount_failure.hpp"

extern char** environ;

namespace tensorfs::csi {
namespace {

constexpr std::size_t kMostMessageBytes = 4096;

// tensorfs's stderr as one line: its lines joined with "; ".
std::string one_line(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    for (std::size_t newline = text.find('\n'); newline != std::string::npos; newline = text.find('\n', newline)) {
        text.replace(newline, 1, "; ");
    }
    return text.empty() ? "tensorfs mount said nothing" : text;
}

// The gRPC code of a kind of error: kubelet retries them all, and shows the message in the pod's events.
grpc::StatusCode code_of(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::NotFound: return grpc::StatusCode::NOT_FOUND;
        case ErrorKind::Permission: return grpc::StatusCode::PERMISSION_DENIED;
        case ErrorKind::Unavailable:
        case ErrorKind::TimedOut: return grpc::StatusCode::UNAVAILABLE;
        case ErrorKind::InvalidSource:
        case ErrorKind::Unsupported: return grpc::StatusCode::INVALID_ARGUMENT;
        case ErrorKind::Io: break;
    }
    return grpc::StatusCode::INTERNAL;
}

grpc::Status status_of(int wait_status, const std::string& said) {
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) return grpc::Status::OK;
    // The source's refusal, in the form made for the plugin (mount_failure.hpp).
    std::size_t start = 0;
    while (start < said.size()) {
        std::size_t end = said.find('\n', start);
        if (end == std::string::npos) end = said.size();
        if (const auto failure = read_failure_record(std::string_view(said).substr(start, end - start))) {
            return {code_of(failure->kind), failure->message};
        }
        start = end + 1;
    }
    const std::string message = one_line(said);
    // Exit status 1 without a record: the arguments the plugin gave (tensorfs's usage errors).
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 1) return {grpc::StatusCode::INVALID_ARGUMENT, message};
    if (WIFSIGNALED(wait_status)) {
        return {grpc::StatusCode::INTERNAL, "tensorfs mount ended by signal " + std::to_string(WTERMSIG(wait_status))};
    }
    return {grpc::StatusCode::INTERNAL, message};
}

bool names_remote_source(const std::string& source) {
    return source.find("://") != std::string::npos;
}

// FNV-1a of a target: a socket's name of fixed length (a unix socket's path has at most 107 bytes).
std::string socket_name_of(const std::string& text) {
    std::uint64_t hash = 14695981039346656037ull;
    for (const unsigned char c : text) {
        hash ^= c;
        hash *= 1099511628211ull;
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
    return hex;
}

// A volume id as the value of log_id=: no comma (which ends an option), no backslash, no control character.
std::string log_id_of(const std::string& volume_id) {
    std::string id = volume_id.substr(0, 256);
    for (char& c : id) {
        if (c == ',' || c == '\\' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f) c = '_';
    }
    return id;
}

std::string one_reply_status(const std::string& reply, int& status) {
    const nlohmann::json answer = nlohmann::json::parse(reply, nullptr, false);
    if (answer.is_object() && answer.contains("status") && answer["status"].is_number_integer()) {
        status = answer["status"].get<int>();
        return {};
    }
    if (answer.is_object() && answer.contains("error") && answer["error"].is_string()) {
        return "the mount holder refused the mount: " + answer["error"].get<std::string>();
    }
    return reply.empty() ? "the mount holder ended during the mount (see its log: kubectl -n kube-system logs "
                           "-l app.kubernetes.io/name=tensorfs-csi-holder)"
                         : "the mount holder answered what tensorfs-csi does not understand";
}

}  // namespace

std::string secrets_socket_of(const MountSettings& settings, const std::string& target) {
    if (settings.secrets_dir.empty()) return {};
    return settings.secrets_dir + "/" + socket_name_of(target) + ".sock";
}

grpc::Status give_secrets_to_daemon(const MountSettings& settings, const PublishRequest& request) {
    const std::string socket = secrets_socket_of(settings, request.target);
    if (socket.empty() || !names_remote_source(request.source)) return grpc::Status::OK;
    const int daemon = connect_to_holder(socket);
    if (daemon < 0) {
        if (errno == ENOENT) {
            std::fprintf(stderr,
                         "tensorfs-csi: volume %s at %s: its daemon takes no new secrets (it was mounted by an older "
                         "tensorfs): changed ones apply when its pod restarts\n",
                         request.volume_id.c_str(), request.target.c_str());
            return grpc::Status::OK;
        }
        return {grpc::StatusCode::UNAVAILABLE,
                "cannot give the volume's daemon its secrets at " + socket + ": " + std::strerror(errno)};
    }
    const timeval limit{5, 0};
    ::setsockopt(daemon, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    ::setsockopt(daemon, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    const nlohmann::json message = {{"mountpoint", request.target}, {"secrets", request.secrets}};
    std::string reply;
    std::vector<int> fds;
    int error = send_message(daemon, message.dump(), {});
    if (error == 0) error = receive_message(daemon, reply, fds);
    for (const int fd : fds) ::close(fd);
    ::close(daemon);
    if (error != 0 || reply.empty()) {
        return {grpc::StatusCode::UNAVAILABLE, "the volume's daemon did not take its secrets at " + socket + ": " +
                                                   (error != 0 ? std::strerror(error) : "it closed the connection")};
    }
    const nlohmann::json answer = nlohmann::json::parse(reply, nullptr, false);
    if (answer.is_object() && answer.contains("error") && answer["error"].is_string()) {
        return {grpc::StatusCode::INTERNAL,
                "the volume's daemon refused its secrets: " + answer["error"].get<std::string>()};
    }
    if (answer.is_object() && answer.contains("changed") && answer["changed"].is_array() &&
        !answer["changed"].empty()) {
        std::string names;
        for (const auto& name : answer["changed"]) {
            if (name.is_string()) names += (names.empty() ? "" : ", ") + name.get<std::string>();
        }
        std::fprintf(stderr, "tensorfs-csi: volume %s at %s: its daemon took changed secrets (%s)\n",
                     request.volume_id.c_str(), request.target.c_str(), names.c_str());
    }
    return grpc::Status::OK;
}

std::vector<std::string> mount_command(const MountSettings& settings, const PublishRequest& request) {
    // allow_other: pods run as any user. The mount is read-only whatever the options say.
    std::string options = "ro,allow_other,cache_dir=" + settings.cache_dir;
    if (!settings.disk_cache_size.empty()) options += ",disk_cache_size=" + settings.disk_cache_size;
    if (!settings.holder_socket.empty() && settings.daemon_log_to_holder) {
        options += ",log_fd=" + std::to_string(kHolderLogFd) + ",log_id=" + log_id_of(request.volume_id);
    }
    options += ",csi_volume=" + log_id_of(request.volume_id);
    if (const std::string socket = secrets_socket_of(settings, request.target);
        !socket.empty() && names_remote_source(request.source)) {
        options += ",secrets_socket=" + socket;
    }
    for (const auto& option : request.options) options += "," + option;
    std::vector<std::string> words = {settings.tensorfs, "mount", request.source, request.target, "-o", options};
    if (!request.secrets.empty()) words.insert(words.end(), {"--secrets-fd", "0"});
    return words;
}

namespace {

// What `tensorfs mount` wrote to `fd` until it closed it (it exits, and its daemon has put its own stderr
// elsewhere).
std::string read_all(int fd) {
    std::string message;
    char buffer[1024];
    for (ssize_t got; (got = ::read(fd, buffer, sizeof buffer)) != 0;) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        if (message.size() < kMostMessageBytes) message.append(buffer, static_cast<std::size_t>(got));
    }
    return message;
}

// The secrets' pipe, written whole before tensorfs starts (16 KiB at most: the pipe holds them), and the pipe of
// its stderr. False when they cannot be made.
bool make_pipes(const PublishRequest& request, int secrets[2], int said[2], bool& written) {
    if (::pipe2(secrets, O_CLOEXEC) != 0) return false;
    if (::pipe2(said, O_CLOEXEC) != 0) {
        ::close(secrets[0]);
        ::close(secrets[1]);
        return false;
    }
    const std::string document = nlohmann::json(request.secrets).dump();
    written = ::write(secrets[1], document.data(), document.size()) == static_cast<ssize_t>(document.size());
    ::close(secrets[1]);
    return true;
}

grpc::Status run_mount_in_holder(const MountSettings& settings, const PublishRequest& request) {
    const int holder = connect_to_holder(settings.holder_socket);
    if (holder < 0) {
        return {grpc::StatusCode::UNAVAILABLE,
                "the mount holder does not answer at " + settings.holder_socket + " (" + std::strerror(errno) +
                    "): its pod on this node must run (kubectl -n kube-system get pods -l "
                    "app.kubernetes.io/name=tensorfs-csi-holder -o wide)"};
    }
    const int binary = ::open(settings.tensorfs.c_str(), O_RDONLY | O_CLOEXEC);
    int secrets[2] = {-1, -1};
    int said[2] = {-1, -1};
    bool written = false;
    if (binary < 0 || !make_pipes(request, secrets, said, written)) {
        const int error = errno;
        if (binary >= 0) ::close(binary);
        ::close(holder);
        return {grpc::StatusCode::INTERNAL, std::string("cannot prepare the mount: ") + std::strerror(error)};
    }
    std::vector<std::string> env;
    for (char** variable = environ; *variable != nullptr; ++variable) env.emplace_back(*variable);
    const nlohmann::json message = {{"volume", request.volume_id}, {"source", request.source},
                                    {"target", request.target},    {"args", mount_command(settings, request)},
                                    {"env", env}};
    const int sent = written ? send_message(holder, message.dump(), {binary, secrets[0], said[1]}) : EPIPE;
    ::close(binary);
    ::close(secrets[0]);
    ::close(said[1]);
    if (sent != 0) {
        ::close(said[0]);
        ::close(holder);
        return {grpc::StatusCode::UNAVAILABLE,
                std::string("cannot ask the mount holder to mount: ") + std::strerror(sent)};
    }
    const std::string said_text = read_all(said[0]);
    ::close(said[0]);
    std::string reply;
    std::vector<int> fds;
    receive_message(holder, reply, fds);
    for (const int fd : fds) ::close(fd);
    ::close(holder);
    int status = 0;
    if (const std::string problem = one_reply_status(reply, status); !problem.empty()) {
        return {grpc::StatusCode::UNAVAILABLE, problem};
    }
    return status_of(status, said_text);
}

}  // namespace

grpc::Status run_mount(const MountSettings& settings, const PublishRequest& request) {
    if (!settings.holder_socket.empty()) return run_mount_in_holder(settings, request);
    int secrets[2] = {-1, -1};
    int said[2] = {-1, -1};
    bool written = false;
    if (!make_pipes(request, secrets, said, written)) {
        return {grpc::StatusCode::INTERNAL, std::string("pipe: ") + std::strerror(errno)};
    }

    std::vector<std::string> words = mount_command(settings, request);
    std::vector<char*> argv;
    for (auto& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, secrets[0], STDIN_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, said[1], STDERR_FILENO);
    pid_t pid = 0;
    const int spawned =
        written ? ::posix_spawn(&pid, settings.tensorfs.c_str(), &actions, nullptr, argv.data(), environ) : EPIPE;
    posix_spawn_file_actions_destroy(&actions);
    ::close(secrets[0]);
    ::close(said[1]);
    if (spawned != 0) {
        ::close(said[0]);
        return {grpc::StatusCode::INTERNAL, "cannot run " + settings.tensorfs + ": " + std::strerror(spawned)};
    }
    const std::string message = read_all(said[0]);
    ::close(said[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status_of(status, message);
}

}  // namespace tensorfs::csi
