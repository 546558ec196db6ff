#include "object_opening.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <utility>

#include "tensorfs/errors.hpp"
#include "url.hpp"

namespace tensorfs::remote {
namespace {

// Asked for when an object is opened: a safetensors header or the first GGUF window mostly fits.
constexpr std::size_t kHeadBytes = 64 << 10;

// What the disk cache remembers of `url` from an earlier open, when it still holds the first bytes (block 0 whole, or
// the piece of it that an open kept): then opening it again asks whether it changed instead of fetching them, and
// `head` holds them.
std::optional<DiskCache::Remembered> remembered_with_head(RemoteContext& context, const std::string& url,
                                                          std::string& head) {
    // Filed under the URL without a password in it, as the blocks are: the record is a file on disk.
    auto known = context.disk().remembered(without_credentials(url));
    if (!known || known->size == 0 || (known->etag.empty() && known->last_modified.empty())) return std::nullopt;
    head.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kHeadBytes, known->size)));
    const auto first_block = static_cast<std::size_t>(std::min<std::uint64_t>(kBlockBytes, known->size));
    const BlockPart first_bytes{0, head.size(), head.data()};
    if (context.disk().read_parts(known->object, 0, first_block, {&first_bytes, 1}, true) ||
        context.disk().read_from_piece(known->object, 0, 0, head.data(), head.size()) == head.size()) {
        return known;
    }
    return std::nullopt;
}

}  // namespace

std::optional<Opened> ask_first_bytes(RemoteContext& context, const std::string& name, const std::string& url) {
    std::string cached_head;
    std::optional<DiskCache::Remembered> known = remembered_with_head(context, url, cached_head);
    std::string head(kHeadBytes, '\0');
    Request request;
    request.url = url;
    request.ranged = true;
    request.first = 0;
    request.last = kHeadBytes - 1;
    request.into = {std::span<char>(head.data(), head.size())};
    request.capacity = head.size();
    if (known) {
        // Answered 304, without a body, when it is still what the cache holds.
        request.headers.push_back(known->etag.empty() ? "If-Modified-Since: " + known->last_modified
                                                      : "If-None-Match: " + known->etag);
    }
    Response response;
    try {
        response = context.http().send(request);
    } catch (const HttpError& error) {
        throw_source_error(error.kind(), name, error.what());
    }
    const std::string answered_by = without_credentials(response.url);
    Identity identity;
    if (response.status == 304 && known) {
        // Unchanged: its identity and first bytes are the cache's.
        identity.size = known->size;
        head = std::move(cached_head);
        response.body_bytes = head.size();
        response.etag = known->etag;
        response.last_modified = known->last_modified;
    }
    switch (response.status) {
        case 304:
            if (!known) throw_problem(name, response.status_text() + " to a request that asked for no condition");
            break;
        case 206: {
            const auto total = response.total_size();
            if (!total) {
                throw_problem(name,
                              "the server answered a range request without the file's size (" + answered_by + ")");
            }
            identity.size = *total;
            if (response.body_bytes != std::min<std::uint64_t>(kHeadBytes, *total)) {
                throw_problem(name, "the server sent " + std::to_string(response.body_bytes) + " bytes for the first " +
                                        std::to_string(std::min<std::uint64_t>(kHeadBytes, *total)));
            }
            break;
        }
        case 200:
            // The whole file instead of a range: fine for a small file, which the head holds entirely.
            if (response.overflow) {
                throw_source_error(ErrorKind::Unsupported, name,
                              "the server does not serve byte ranges (it answered HTTP 200 with the whole file), "
                              "and tensorfs fetches only the ranges it reads");
            }
            identity.size = response.body_bytes;
            break;
        case 416:
            // No byte 0: an empty file.
            identity.size = response.total_size().value_or(0);
            if (identity.size != 0) {
                throw_problem(name, response.status_text() + " for its first bytes (" + answered_by + ")");
            }
            response.body_bytes = 0;
            break;
        case 404:
        case 410:
            // Not there; unless the server names another cause (S3's NoSuchBucket), which is not a missing file.
            if (response.error_code.empty() || response.error_code == "NoSuchKey") return std::nullopt;
            throw_source_error(kind_of(response), name, context.refusal(response));
        default:
            throw_source_error(kind_of(response), name, context.refusal(response));
    }
    head.resize(static_cast<std::size_t>(response.body_bytes));
    identity.etag = response.etag;
    identity.last_modified = response.last_modified;
    if (!identity.last_modified.empty()) {
        const time_t when = curl_getdate(identity.last_modified.c_str(), nullptr);
        if (when > 0) identity.modified.tv_sec = when;
    }
    const bool as_remembered = known && known->size == identity.size && known->etag == identity.etag &&
                               known->last_modified == identity.last_modified;
    Opened opened{std::move(identity), std::move(head), {}, std::nullopt};
    if (response.url != url) opened.location = response.url;
    if (as_remembered) opened.remembered_folder = known->object;
    return opened;
}

}  // namespace tensorfs::remote
