// proxy= and header=: what every request of a source goes through and carries (source_options.hpp).
#include <algorithm>
#include <array>
#include <cctype>

#include "tensorfs/source_options.hpp"

namespace tensorfs {
namespace {

// Headers tensorfs sets itself on some requests (ranges, consistency, credentials, S3's signature): a second copy
// from header= would make those requests wrong, or send a credential to every host.
constexpr std::array<std::string_view, 8> kOwnHeaders = {
    "host", "range", "if-match", "if-range", "authorization", "content-length", "transfer-encoding",
    "proxy-authorization"};

// RFC 9110's token characters, which a header name is made of.
bool is_token_character(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string lower(std::string_view text) {
    std::string lowered(text);
    std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lowered;
}

}  // namespace

std::string take_proxy(std::string_view url, SourceOptions& options) {
    if (url.empty()) return "proxy= needs a URL (e.g. proxy=http://127.0.0.1:4001)";
    for (const char c : url) {
        if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
            return "bad proxy '" + std::string(url) + "': a URL has no spaces or control characters";
        }
    }
    options.proxy = std::string(url);
    return {};
}

std::string take_header(std::string_view name_value, SourceOptions& options, bool kubernetes) {
    const std::size_t colon = name_value.find(':');
    const std::string_view name = name_value.substr(0, colon);
    if (colon == std::string_view::npos || name.empty() || !std::all_of(name.begin(), name.end(), is_token_character)) {
        return "bad header '" + std::string(name_value) + "' (NAME:VALUE, e.g. header=X-Dragonfly-Use-P2P:true)";
    }
    std::string_view value = name_value.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    for (const char c : value) {
        if ((static_cast<unsigned char>(c) < ' ' && c != '\t') || c == 0x7f) {
            return "bad header '" + std::string(name) + "': its value holds a control character";
        }
    }
    const std::string lowered = lower(name);
    if (std::find(kOwnHeaders.begin(), kOwnHeaders.end(), lowered) != kOwnHeaders.end() ||
        lowered.starts_with("x-amz-")) {
        const std::string credentials = kubernetes
                                            ? " (credentials go in the Secret of the volume's nodePublishSecretRef)"
                                            : " (credentials: HF_TOKEN, ~/.netrc, the AWS keys)";
        return "header '" + std::string(name) + "' is one tensorfs sets itself" +
               (lowered == "authorization" ? credentials : "");
    }
    options.headers.push_back(std::string(name) + ": " + std::string(value));
    return {};
}

}  // namespace tensorfs
