#include "secrets_socket.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "remote/log.hpp"
#include "remote/secrets.hpp"
#include "tensorfs/exit_signals.hpp"

namespace tensorfs {
namespace {

// The secrets (64 KiB at most, as --secrets-fd takes them) and the message around them.
constexpr std::size_t kMostSecretsMessageBytes = 80 * 1024;

void send_answer(int connection, const nlohmann::json& answer) {
    const std::string text = answer.dump();
    const ssize_t sent = ::send(connection, text.data(), text.size(), MSG_NOSIGNAL);
    static_cast<void>(sent);  // a client that went away gets no answer
}

}  // namespace

std::unique_ptr<SecretsSocket> SecretsSocket::listen_at(const std::string& path, std::string& error) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof address.sun_path) {
        error = "secrets_socket=" + path + ": a socket's path must be 1 to " +
                std::to_string(sizeof address.sun_path - 1) + " bytes";
        return nullptr;
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    struct stat info {};
    if (::lstat(path.c_str(), &info) == 0) {
        if (!S_ISSOCK(info.st_mode)) {
            error = "secrets_socket=" + path + ": it exists and is not a socket";
            return nullptr;
        }
        ::unlink(path.c_str());  // an earlier daemon's, of the same target: it ended
    }
    const int listener = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    int stop[2] = {-1, -1};
    const mode_t mask = ::umask(077);
    const bool ready = listener >= 0 &&
                       ::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
                       ::chmod(path.c_str(), 0600) == 0 && ::listen(listener, 16) == 0 &&
                       ::pipe2(stop, O_CLOEXEC) == 0;
    ::umask(mask);
    if (!ready) {
        error = "secrets_socket=" + path + ": " + std::strerror(errno);
        if (listener >= 0) ::close(listener);
        ::unlink(path.c_str());
        return nullptr;
    }
    return std::unique_ptr<SecretsSocket>(new SecretsSocket(path, listener, stop[0], stop[1]));
}

SecretsSocket::SecretsSocket(std::string path, int listener, int stop_read, int stop_write)
    : path_(std::move(path)), listener_(listener), stop_read_(stop_read), stop_write_(stop_write) {}

SecretsSocket::~SecretsSocket() {
    if (thread_.joinable()) {
        const char byte = 0;
        const ssize_t written = ::write(stop_write_, &byte, 1);
        static_cast<void>(written);
        thread_.join();
        // Only the daemon that serves removes it (not the process that exits after the fork).
        ::unlink(path_.c_str());
    }
    ::close(listener_);
    ::close(stop_read_);
    ::close(stop_write_);
}

void SecretsSocket::start(const std::string& mountpoint) {
    mountpoint_ = mountpoint;
    start_threads_blocking_exit_signals([this] { thread_ = std::thread([this] { serve(); }); });
}

void SecretsSocket::serve() {
    for (;;) {
        pollfd ready[2] = {{listener_, POLLIN, 0}, {stop_read_, POLLIN, 0}};
        if (::poll(ready, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (ready[1].revents != 0) return;
        if ((ready[0].revents & POLLIN) == 0) continue;
        const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (connection < 0) continue;
        answer(connection);
        ::close(connection);
    }
}

void SecretsSocket::answer(int connection) {
    ucred peer{};
    socklen_t length = sizeof peer;
    if (::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 ||
        (peer.uid != 0 && peer.uid != ::geteuid())) {
        send_answer(connection, {{"error", "only the daemon's own user may give it secrets"}});
        return;
    }
    // A client that connects and says nothing must not hold the socket.
    const timeval limit{5, 0};
    ::setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    std::string text(kMostSecretsMessageBytes + 1, '\0');
    const ssize_t got = ::recv(connection, text.data(), text.size(), MSG_TRUNC);
    if (got <= 0 || static_cast<std::size_t>(got) > kMostSecretsMessageBytes) {
        send_answer(connection, {{"error", got <= 0 ? "no message" : "the message is larger than 80 KiB"}});
        return;
    }
    text.resize(static_cast<std::size_t>(got));
    const nlohmann::json message = nlohmann::json::parse(text, nullptr, false);
    if (!message.is_object() || !message.contains("mountpoint") || !message["mountpoint"].is_string() ||
        !message.contains("secrets")) {
        send_answer(connection, {{"error", "expected {\"mountpoint\": PATH, \"secrets\": {...}}"}});
        return;
    }
    if (message["mountpoint"].get<std::string>() != mountpoint_) {
        send_answer(connection, {{"error", "this is the daemon of " + mountpoint_ + ", not of " +
                                         message["mountpoint"].get<std::string>()}});
        return;
    }
    std::map<std::string, std::string> secrets;
    if (const std::string error = remote::parse_secrets(message["secrets"].dump(), secrets); !error.empty()) {
        send_answer(connection, {{"error", error}});
        return;
    }
    const std::vector<std::string> changed = remote::give_secrets(std::move(secrets));
    if (!changed.empty()) {
        std::string names;
        for (const auto& name : changed) names += (names.empty() ? "" : ", ") + name;
        remote::log_warning("new credentials given (" + names + "): the next requests use them");
    }
    send_answer(connection, {{"changed", changed}});
}

}  // namespace tensorfs
