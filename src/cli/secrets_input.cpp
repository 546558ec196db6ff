#include "secrets_input.hpp"

#include <unistd.h>

#include <cerrno>
#include <map>
#include <optional>

#include "remote/secrets.hpp"
#include "remote/url.hpp"

namespace tensorfs::cli {
namespace {

constexpr std::size_t kMostSecretBytes = 64 * 1024;

// The whole of `fd`, or nullopt when it cannot be read or holds more than kMostSecretBytes.
std::optional<std::string> read_all(int fd) {
    std::string text;
    char buffer[4096];
    for (;;) {
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return std::nullopt;
        if (got == 0) return text;
        text.append(buffer, static_cast<std::size_t>(got));
        if (text.size() > kMostSecretBytes) return std::nullopt;
    }
}

}  // namespace

std::string take_secrets(int fd, MountOptions& options) {
    const std::optional<std::string> text = read_all(fd);
    ::close(fd);
    if (!text) return "--secrets-fd: cannot read descriptor " + std::to_string(fd) + " (or it holds more than 64 KiB)";
    std::map<std::string, std::string> secrets;
    if (const std::string error = remote::parse_secrets(*text, secrets); !error.empty()) {
        return "--secrets-fd: " + error;
    }
    if (secrets.count("username") != 0 || secrets.count("password") != 0) {
        const bool http = options.source.starts_with("http://") || options.source.starts_with("https://");
        if (!http) return "--secrets-fd: username and password are for an http(s):// SOURCE";
        if (remote::without_credentials(options.source) != options.source) {
            return "--secrets-fd: the SOURCE already holds a user name or password";
        }
    }
    remote::give_secrets(std::move(secrets));
    return {};
}

}  // namespace tensorfs::cli
