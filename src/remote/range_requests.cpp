#include "range_requests.hpp"

#include "block.hpp"
#include "log.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs::remote {
namespace {

bool is_weak(const std::string& etag) { return etag.starts_with("W/"); }

}  // namespace

RangeRequests::RangeRequests(RemoteContext& context, const SourceObject& object, const std::string& url,
                             const Identity& identity, std::string location)
    : context_(context), object_(object), url_(url), identity_(identity), location_(std::move(location)) {}

std::vector<std::string> RangeRequests::precondition_headers() const {
    // If-Match makes a server answer 412 when the object changed; If-Range makes one that ignores If-Match send
    // the whole new object instead of a range, which is refused as well (and cut short by the buffer's size).
    if (!identity_.etag.empty() && !is_weak(identity_.etag)) {
        return {"If-Match: " + identity_.etag, "If-Range: " + identity_.etag};
    }
    if (!identity_.last_modified.empty()) {
        return {"If-Unmodified-Since: " + identity_.last_modified, "If-Range: " + identity_.last_modified};
    }
    return {};
}

void RangeRequests::fetch(std::uint64_t offset, std::vector<std::span<char>> into, Deadline deadline) const {
    if (changed_) {
        throw IoError(object_.name(), "changed on the server since it was mounted; mount it again to read it");
    }
    std::size_t length = 0;
    for (const std::span<char> buffer : into) length += buffer.size();
    fail_if_silent(context_, object_.name());
    Request request;
    request.ranged = true;
    request.first = offset;
    request.last = offset + length - 1;
    request.headers = precondition_headers();
    request.into = std::move(into);
    request.capacity = length;
    request.deadline = deadline;
    request.on_answer = [context = &context_] { context->answered(); };
    for (int attempt = 0;; ++attempt) {
        {
            const std::lock_guard lock(mutex_);
            request.url = location_.empty() ? url_ : location_;
        }
        const bool redirected_before = request.url != url_;
        Response response;
        try {
            response = context_.http().send(request);
        } catch (const CredentialsError& error) {
            throw IoError(object_.name(), error.what(), error.kind());  // nothing was sent: the server is not silent
        } catch (const HttpError& error) {
            context_.no_answer();
            throw IoError(object_.name(), error.what(), error.kind());
        }
        if (response.status == 206) {
            if (!identity_.etag.empty() && !response.etag.empty() && response.etag != identity_.etag) {
                changed("its ETag is now " + response.etag + ", was " + identity_.etag);
            }
            const auto total = response.total_size();
            if (total && *total != object_.size()) {
                changed("its size is now " + std::to_string(*total) + ", was " + std::to_string(object_.size()));
            }
            if (response.body_bytes != length) {
                throw IoError(object_.name(), "the server sent " + std::to_string(response.body_bytes) +
                                         " bytes for a range of " + std::to_string(length));
            }
            if (response.url != url_) {
                const std::lock_guard lock(mutex_);
                location_ = response.url;
            }
            // Whole blocks (not a parser's or a random reader's few bytes) tell what a range of the read-ahead costs.
            if (length >= kBlockBytes) context_.measured(length, response.first_byte_us, response.total_us);
            return;
        }
        // 412: If-Match failed. 200: If-Range failed (the whole object came instead of a range). 416: it shrank.
        if (response.status == 412 || response.status == 200 || response.status == 416) {
            changed(response.status_text());
        }
        if (redirected_before && attempt == 0) {
            // Where the object redirected to may have expired (signed CDN addresses do): ask its own URL again.
            const std::lock_guard lock(mutex_);
            location_.clear();
            continue;
        }
        if (response.status == 404 || response.status == 410) changed("no longer there: " + response.status_text());
        // Refused credentials: the source's explanation says what to do (update a Kubernetes volume's Secret...).
        if (response.status == 400 || response.status == 401 || response.status == 403) {
            throw IoError(object_.name(), context_.refusal(response), kind_of(response));
        }
        throw IoError(object_.name(), response.status_text(), kind_of(response));
    }
}

void RangeRequests::changed(const std::string& how) const {
    const std::string what = "changed on the server since it was mounted (" + how + ")";
    if (!changed_.exchange(true)) {
        context_.counters().objects_changed.add(1);
        log_warning(object_.name() + ": " + what + "; its reads fail with EIO until it is mounted again");
    }
    throw IoError(object_.name(), what);
}

}  // namespace tensorfs::remote
