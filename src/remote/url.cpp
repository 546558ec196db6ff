#include "url.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

namespace tensorfs::remote {
namespace {

using UrlHandle = std::unique_ptr<CURLU, decltype(&curl_url_cleanup)>;

UrlHandle parse(const std::string& url) {
    UrlHandle handle(curl_url(), curl_url_cleanup);
    if (!handle || curl_url_set(handle.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) {
        return UrlHandle(nullptr, curl_url_cleanup);
    }
    return handle;
}

// One part of a parsed URL, or an empty string when it has none.
std::string part(CURLU* url, CURLUPart which, unsigned flags = 0) {
    char* text = nullptr;
    if (curl_url_get(url, which, &text, flags) != CURLUE_OK || text == nullptr) return {};
    std::string value(text);
    curl_free(text);
    return value;
}

constexpr std::array<std::string_view, 6> kFileSuffixes = {".safetensors", ".gguf", ".json", ".bin", ".pt", ".pth"};

}  // namespace

std::string origin_of(const std::string& url) {
    const UrlHandle parsed = parse(url);
    if (!parsed) return {};
    std::string host = part(parsed.get(), CURLUPART_HOST);
    std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
    return part(parsed.get(), CURLUPART_SCHEME) + "://" + host + ":" +
           part(parsed.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
}

std::string resolve_url(const std::string& base, const std::string& reference) {
    const UrlHandle parsed = parse(base);
    if (!parsed) throw std::runtime_error("not a URL: " + base);
    // Setting a URL on a handle that holds one resolves it as a reference relative to the one held.
    if (curl_url_set(parsed.get(), CURLUPART_URL, reference.c_str(), 0) != CURLUE_OK) {
        throw std::runtime_error("not a URL reference: " + reference);
    }
    return part(parsed.get(), CURLUPART_URL);
}

std::string without_credentials(const std::string& url) {
    const UrlHandle parsed = parse(url);
    if (!parsed) return url;
    if (part(parsed.get(), CURLUPART_USER).empty() && part(parsed.get(), CURLUPART_PASSWORD).empty()) return url;
    curl_url_set(parsed.get(), CURLUPART_USER, nullptr, 0);
    curl_url_set(parsed.get(), CURLUPART_PASSWORD, nullptr, 0);
    return part(parsed.get(), CURLUPART_URL);
}

std::string percent_encode(std::string_view text, std::string_view keep) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        const bool unreserved = std::isalnum(byte) || c == '-' || c == '.' || c == '_' || c == '~';
        if (unreserved || keep.find(c) != std::string_view::npos) {
            out += c;
        } else {
            out += '%';
            out += kHex[byte >> 4];
            out += kHex[byte & 0xF];
        }
    }
    return out;
}

std::string percent_decode(std::string_view text) {
    const auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
            out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

bool names_a_file(std::string_view path) {
    return std::any_of(kFileSuffixes.begin(), kFileSuffixes.end(),
                       [&](std::string_view suffix) { return path.ends_with(suffix); });
}

}  // namespace tensorfs::remote
