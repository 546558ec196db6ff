// URL arithmetic on libcurl's URL parser: no hand-written parsing of hosts, ports or relative references.
#pragma once

#include <string>
#include <string_view>

namespace tensorfs::remote {

// "scheme://host:port" with the default port filled in and the host lower-case: two URLs with the same origin
// reach the same server, so credentials for one may go to the other. Empty when `url` does not parse.
std::string origin_of(const std::string& url);

// `reference` (absolute, or relative like a Location header) resolved against `base`. Throws std::runtime_error
// when either does not parse.
std::string resolve_url(const std::string& base, const std::string& reference);

// `url` without a user name or password in it: how messages may name it.
std::string without_credentials(const std::string& url);

// Percent-encodes everything but RFC 3986's unreserved characters and `keep` (e.g. "/" for a path).
std::string percent_encode(std::string_view text, std::string_view keep = "");

// Decodes %XX sequences; anything else is kept as it is.
std::string percent_decode(std::string_view text);

// Whether a path in a remote store (a Hub repo, a bucket) names a file that tensorfs mounts, by its suffix
// (.safetensors, .gguf, .json, .bin, .pt, .pth), rather than a folder: their listings tell folders only.
bool names_a_file(std::string_view path);

}  // namespace tensorfs::remote
