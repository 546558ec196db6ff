#include "mount_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

extern char** environ;

namespace tensorfs::csi {
namespace {

constexpr std::size_t kMostMessageBytes = 4096;

// What tensorfs says when the SOURCE (a file, a repository, a bucket, a key) is not there, in each of its sources.
constexpr std::array<std::string_view, 7> kMissing = {
    "no such file", "HTTP 404", "HTTP 410", "NoSuchKey", "NoSuchBucket", "no such repository", "there is no bucket"};
// ... when the server refuses the credentials (or their absence) ...
constexpr std::array<std::string_view, 7> kRefused = {"HTTP 401",           "HTTP 403",          "AccessDenied",
                                                      "SignatureDoesNotMatch", "InvalidAccessKeyId", "InvalidToken",
                                                      "ExpiredToken"};
// ... and when the server cannot be reached at all.
constexpr std::array<std::string_view, 3> kUnreachable = {"cannot connect", "cannot resolve host", "timed out"};

template <std::size_t N>
bool says_any(const std::string& message, const std::array<std::string_view, N>& phrases) {
    for (const auto phrase : phrases) {
        if (message.find(phrase) != std::string::npos) return true;
    }
    return false;
}

// tensorfs's stderr as one line: its lines joined with "; ".
std::string one_line(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    for (std::size_t newline = text.find('\n'); newline != std::string::npos; newline = text.find('\n', newline)) {
        text.replace(newline, 1, "; ");
    }
    return text.empty() ? "tensorfs mount said nothing" : text;
}

grpc::Status status_of(int wait_status, const std::string& said) {
    const std::string message = one_line(said);
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) return grpc::Status::OK;
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 1) {
        if (says_any(message, kRefused)) return {grpc::StatusCode::PERMISSION_DENIED, message};
        if (says_any(message, kMissing)) return {grpc::StatusCode::NOT_FOUND, message};
        if (says_any(message, kUnreachable)) return {grpc::StatusCode::UNAVAILABLE, message};
        return {grpc::StatusCode::INVALID_ARGUMENT, message};
    }
    if (WIFSIGNALED(wait_status)) {
        return {grpc::StatusCode::INTERNAL, "tensorfs mount ended by signal " + std::to_string(WTERMSIG(wait_status))};
    }
    return {grpc::StatusCode::INTERNAL, message};
}

}  // namespace

std::vector<std::string> mount_command(const MountSettings& settings, const PublishRequest& request) {
    // allow_other: pods run as any user. The mount is read-only whatever the options say.
    std::string options = "ro,allow_other,cache_dir=" + settings.cache_dir;
    if (!settings.disk_cache_size.empty()) options += ",disk_cache_size=" + settings.disk_cache_size;
    for (const auto& option : request.options) options += "," + option;
    std::vector<std::string> words = {settings.tensorfs, "mount", request.source, request.target, "-o", options};
    if (!request.secrets.empty()) words.insert(words.end(), {"--secrets-fd", "0"});
    return words;
}

grpc::Status run_mount(const MountSettings& settings, const PublishRequest& request) {
    // The secrets, written whole into the pipe before tensorfs starts (16 KiB at most: the pipe holds them).
    int secrets[2] = {-1, -1};
    int said[2] = {-1, -1};
    if (::pipe2(secrets, O_CLOEXEC) != 0 || ::pipe2(said, O_CLOEXEC) != 0) {
        return {grpc::StatusCode::INTERNAL, std::string("pipe: ") + std::strerror(errno)};
    }
    const std::string document = nlohmann::json(request.secrets).dump();
    const bool written = ::write(secrets[1], document.data(), document.size()) == static_cast<ssize_t>(document.size());
    ::close(secrets[1]);

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
    // Its stderr until it closes (tensorfs exits, and its daemon has put its own on /dev/null).
    std::string message;
    char buffer[1024];
    for (ssize_t got; (got = ::read(said[0], buffer, sizeof buffer)) != 0;) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        if (message.size() < kMostMessageBytes) message.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(said[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status_of(status, message);
}

}  // namespace tensorfs::csi
