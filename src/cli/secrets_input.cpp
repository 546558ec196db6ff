#include "secrets_input.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "remote/url.hpp"

namespace tensorfs::cli {
namespace {

constexpr std::size_t kMostSecretBytes = 64 * 1024;
// The variables the remote layer reads credentials from (hub.cpp, aws_config.cpp).
constexpr std::array<std::string_view, 4> kVariables = {"HF_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                                        "AWS_SESSION_TOKEN"};

bool is_variable(std::string_view name) {
    for (const auto variable : kVariables) {
        if (name == variable) return true;
    }
    return false;
}

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

// SOURCE with USER:PASSWORD@ after its scheme, both percent-encoded.
std::string with_credentials(const std::string& source, const std::string& user, const std::string& password) {
    const std::size_t authority = source.find("://") + 3;
    return source.substr(0, authority) + remote::percent_encode(user) + ":" + remote::percent_encode(password) + "@" +
           source.substr(authority);
}

}  // namespace

std::string take_secrets(int fd, MountOptions& options) {
    const std::optional<std::string> text = read_all(fd);
    ::close(fd);
    if (!text) return "--secrets-fd: cannot read descriptor " + std::to_string(fd) + " (or it holds more than 64 KiB)";
    const nlohmann::json secrets = nlohmann::json::parse(*text, nullptr, false);
    if (!secrets.is_object()) return "--secrets-fd: expected one JSON object of strings";
    std::string user;
    std::string password;
    bool aws_keys = false;
    for (const auto& [name, value] : secrets.items()) {
        if (!value.is_string()) return "--secrets-fd: '" + name + "' is not a string";
        const std::string text_value = value.get<std::string>();
        if (name == "username") {
            user = text_value;
        } else if (name == "password") {
            password = text_value;
        } else if (is_variable(name)) {
            aws_keys = aws_keys || name.starts_with("AWS_");
            if (::setenv(name.c_str(), text_value.c_str(), 1) != 0) return "--secrets-fd: cannot set " + name;
        } else {
            return "--secrets-fd: unknown secret '" + name +
                   "' (HF_TOKEN, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, username, password)";
        }
    }
    // Keys given here are the whole set: a session token from the environment belongs to other keys.
    if (aws_keys && !secrets.contains("AWS_SESSION_TOKEN")) ::unsetenv("AWS_SESSION_TOKEN");
    if (!user.empty() || !password.empty()) {
        const bool http = options.source.starts_with("http://") || options.source.starts_with("https://");
        if (!http) return "--secrets-fd: username and password are for an http(s):// SOURCE";
        if (remote::without_credentials(options.source) != options.source) {
            return "--secrets-fd: the SOURCE already holds a user name or password";
        }
        options.source = with_credentials(options.source, user, password);
    }
    return {};
}

}  // namespace tensorfs::cli
