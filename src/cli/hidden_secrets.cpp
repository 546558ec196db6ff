#include "hidden_secrets.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern char** environ;

namespace tensorfs::cli {
namespace {

constexpr const char* kSecretVariables[] = {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
                                            "AWS_SESSION_TOKEN"};

// Where the password of each `SCHEME://USER:PASSWORD@HOST` in `text` is: (offset, length) pairs.
std::vector<std::pair<std::size_t, std::size_t>> password_spans(std::string_view text) {
    std::vector<std::pair<std::size_t, std::size_t>> spans;
    for (std::size_t scheme_end = text.find("://"); scheme_end != std::string_view::npos;
         scheme_end = text.find("://", scheme_end + 3)) {
        const std::size_t authority = scheme_end + 3;
        const std::size_t authority_end = std::min(text.find_first_of("/?#", authority), text.size());
        const std::string_view authority_text = text.substr(authority, authority_end - authority);
        const std::size_t at = authority_text.rfind('@');
        if (at == std::string_view::npos) continue;
        const std::size_t colon = authority_text.substr(0, at).find(':');
        if (colon == std::string_view::npos) continue;
        spans.emplace_back(authority + colon + 1, at - colon - 1);
    }
    return spans;
}

// Overwrites the password of each URL in `text` with as many '*'; returns whether it found one.
bool mask_url_passwords(char* text) {
    const auto spans = password_spans(text);
    for (const auto& [offset, length] : spans) std::memset(text + offset, '*', length);
    return !spans.empty();
}

bool is_secret_variable(std::string_view name) {
    for (const char* secret : kSecretVariables) {
        if (name == secret) return true;
    }
    return false;
}

}  // namespace

std::string with_passwords_hidden(const std::string& text) {
    std::string shown = text;
    const auto spans = password_spans(text);
    for (auto span = spans.rbegin(); span != spans.rend(); ++span) shown.replace(span->first, span->second, "***");
    return shown;
}

void hide_secrets_from_ps(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) mask_url_passwords(argv[i]);

    // The environment area's strings, before setenv points environ at copies of some of them.
    std::vector<char*> originals;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) originals.push_back(*entry);
    for (char* original : originals) {
        char* equals = std::strchr(original, '=');
        if (equals == nullptr) continue;
        const std::string name(original, equals);
        const std::string value(equals + 1);
        std::string masked = value;
        const bool has_password = mask_url_passwords(masked.data());
        if (!has_password && !is_secret_variable(name)) continue;
        // The process reads the variable from a heap copy from now on; the area /proc shows gets stars.
        if (::setenv(name.c_str(), value.c_str(), 1) != 0) continue;
        if (!has_password) masked.assign(value.size(), '*');
        std::memcpy(equals + 1, masked.data(), masked.size());
    }
}

}  // namespace tensorfs::cli
