#include "remote_object.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cstring>

#include "log.hpp"
#include "tensorfs/background_queue.hpp"
#include "tensorfs/errors.hpp"
#include "url.hpp"

namespace tensorfs::remote {
namespace {

// Asked for when an object is opened: a safetensors header or the first GGUF window mostly fits.
constexpr std::size_t kHeadBytes = 64 << 10;
// Blocks fetched ahead of a sequential reader, and the threads that fetch them (for all objects of the process).
constexpr std::uint64_t kReadAheadBlocks = 8;
constexpr unsigned kReadAheadThreads = 8;
constexpr std::size_t kMaxQueuedAhead = 32;
// Where this many recent reads ended is remembered: a read that starts at one of them is sequential.
constexpr std::size_t kRecentEnds = 32;

[[noreturn]] void refuse(const std::string& name, const std::string& what) {
    Problems problems;
    problems.add(name, what);
    problems.throw_if_any();
    throw InvalidSource({});  // unreachable: throw_if_any threw
}

// One queue for the whole process, made at the first read-ahead (after a daemon's fork) and ended at exit, after
// every object: a task holds its object only while it runs.
BackgroundQueue& read_ahead_queue() {
    static BackgroundQueue queue(kReadAheadThreads, kMaxQueuedAhead);
    return queue;
}

bool is_weak(const std::string& etag) { return etag.starts_with("W/"); }

}  // namespace

std::shared_ptr<RemoteObject> RemoteObject::open(std::shared_ptr<RemoteContext> context, std::string name,
                                                 std::string url) {
    std::string head(kHeadBytes, '\0');
    Request request;
    request.url = url;
    request.ranged = true;
    request.first = 0;
    request.last = kHeadBytes - 1;
    request.into = head.data();
    request.capacity = head.size();
    Response response;
    try {
        response = context->http().send(request);
    } catch (const HttpError& error) {
        refuse(name, error.what());
    }
    const std::string answered_by = without_credentials(response.url);
    Identity identity;
    switch (response.status) {
        case 206: {
            const auto total = response.total_size();
            if (!total) refuse(name, "the server answered a range request without the file's size (" + answered_by + ")");
            identity.size = *total;
            if (response.body_bytes != std::min<std::uint64_t>(kHeadBytes, *total)) {
                refuse(name, "the server sent " + std::to_string(response.body_bytes) + " bytes for the first " +
                                 std::to_string(std::min<std::uint64_t>(kHeadBytes, *total)));
            }
            break;
        }
        case 200:
            // The whole file instead of a range: fine for a small file, which the head holds entirely.
            if (response.overflow) {
                refuse(name, "the server does not serve byte ranges (it answered HTTP 200 with the whole file), "
                             "and tensorfs fetches only the ranges it reads");
            }
            identity.size = response.body_bytes;
            break;
        case 416:
            // No byte 0: an empty file.
            identity.size = response.total_size().value_or(0);
            if (identity.size != 0) refuse(name, response.status_text() + " for its first bytes (" + answered_by + ")");
            response.body_bytes = 0;
            break;
        case 404:
        case 410:
            // Not there; unless the server names another cause (S3's NoSuchBucket), which is not a missing file.
            if (response.error_code.empty() || response.error_code == "NoSuchKey") return nullptr;
            refuse(name, context->refusal(response));
        default:
            refuse(name, context->refusal(response));
    }
    head.resize(static_cast<std::size_t>(response.body_bytes));
    identity.etag = response.etag;
    identity.last_modified = response.last_modified;
    if (!identity.last_modified.empty()) {
        const time_t when = curl_getdate(identity.last_modified.c_str(), nullptr);
        if (when > 0) identity.modified.tv_sec = when;
    }
    auto object = std::make_shared<RemoteObject>(std::move(context), std::move(name), std::move(url),
                                                 std::move(identity), std::move(head));
    if (response.url != object->url_) object->location_ = response.url;
    return object;
}

RemoteObject::RemoteObject(std::shared_ptr<RemoteContext> context, std::string name, std::string url,
                           Identity identity, std::string head)
    : SourceObject(std::move(name), identity.size, identity.modified),
      context_(std::move(context)),
      url_(std::move(url)),
      identity_(std::move(identity)),
      serial_(context_->next_serial()),
      head_(std::move(head)) {}

void RemoteObject::read(std::uint64_t offset, std::size_t length, void* dst) const {
    if (length == 0) return;
    if (offset > size() || length > size() - offset) throw IoError(name(), "read past the end of the file");
    {
        const std::lock_guard lock(head_mutex_);
        if (offset + length <= head_.size()) {
            std::memcpy(dst, head_.data() + offset, length);
            return;
        }
    }
    fetch(offset, length, static_cast<char*>(dst));
}

void RemoteObject::read_in_region(std::uint64_t offset, std::size_t length, void* dst, std::uint64_t region_begin,
                                  std::uint64_t region_end) const {
    if (length == 0) return;
    if (offset > size() || length > size() - offset) throw IoError(name(), "read past the end of the file");
    if (!head_dropped_.exchange(true)) {
        const std::lock_guard lock(head_mutex_);
        std::string().swap(head_);
    }
    const std::uint64_t first = offset / kBlockBytes;
    const std::uint64_t last = (offset + length - 1) / kBlockBytes;
    // A reader that starts a region or goes on where a read ended gets the next blocks of the region fetched
    // ahead, the more the further it has come (1 block ahead in the region's first block, up to kReadAheadBlocks):
    // one that only peeks at a tensor's start costs a block, not a window. The later blocks of a read that spans
    // several are fetched at once too.
    const bool sequential = continues_a_read(offset, offset + length) || offset == region_begin;
    if (sequential && region_end > 0) {
        const std::uint64_t window = std::min(kReadAheadBlocks, last - region_begin / kBlockBytes + 1);
        read_ahead(last + 1, std::min(last + window, (std::min(region_end, size()) - 1) / kBlockBytes));
    }
    if (last > first) read_ahead(first + 1, last);

    auto* out = static_cast<char*>(dst);
    for (std::uint64_t index = first; index <= last; ++index) {
        const BlockPtr bytes = block(index);
        const std::uint64_t start = index * kBlockBytes;
        const std::uint64_t from = std::max(offset, start);
        const std::uint64_t to = std::min<std::uint64_t>(offset + length, start + bytes->length);
        std::memcpy(out, bytes->bytes.get() + (from - start), to - from);
        out += to - from;
    }
}

bool RemoteObject::continues_a_read(std::uint64_t offset, std::uint64_t end) const {
    const std::lock_guard lock(mutex_);
    const bool found = std::find(recent_ends_.begin(), recent_ends_.end(), offset) != recent_ends_.end();
    if (recent_ends_.size() < kRecentEnds) {
        recent_ends_.push_back(end);
    } else {
        recent_ends_[next_end_++ % kRecentEnds] = end;
    }
    return found;
}

void RemoteObject::read_ahead(std::uint64_t first, std::uint64_t last) const {
    for (std::uint64_t index = first; index <= last && index * kBlockBytes < size(); ++index) {
        if (context_->has_or_fetching(serial_, index)) continue;
        std::weak_ptr<const RemoteObject> weak = weak_from_this();
        read_ahead_queue().offer([weak, index] {
            const auto self = weak.lock();
            if (self == nullptr) return;
            try {
                self->block(index);
            } catch (...) {
                // The reader that wants this block fetches it again and meets the error itself.
            }
        });
    }
}

BlockPtr RemoteObject::block(std::uint64_t index) const {
    bool keep_on_disk = false;
    BlockPtr loaded = context_->block(serial_, index, [&] { return load_block(index, keep_on_disk); });
    // Kept on disk once its readers have it: a disk that falls behind never holds a block back from them.
    if (keep_on_disk) context_->disk().write_later(*cache_folder(), index, loaded);
    return loaded;
}

BlockPtr RemoteObject::load_block(std::uint64_t index, bool& keep_on_disk) const {
    const std::uint64_t start = index * kBlockBytes;
    auto loaded = std::make_shared<Block>();
    loaded->length = static_cast<std::size_t>(std::min<std::uint64_t>(kBlockBytes, size() - start));
    loaded->bytes.reset(new char[loaded->length]);
    char* bytes = loaded->bytes.get();
    const auto& folder = cache_folder();
    if (folder && context_->disk().read(*folder, index, bytes, loaded->length)) {
        context_->counters().disk_cache_hits.add(1);
        return loaded;
    }
    context_->counters().disk_cache_misses.add(1);
    fetch(start, loaded->length, bytes);
    keep_on_disk = folder.has_value();
    return loaded;
}

const std::optional<std::filesystem::path>& RemoteObject::cache_folder() const {
    std::call_once(cache_folder_once_, [this] {
        // Without an ETag or a Last-Modified the object cannot be told from a newer version: never cached.
        if (identity_.etag.empty() && identity_.last_modified.empty()) return;
        const std::string identity =
            identity_.etag.empty() ? "last-modified " + identity_.last_modified : "etag " + identity_.etag;
        // The URL without a password in it: the key is a file on disk, and `tensorfs cache ls` shows it.
        cache_folder_ = context_->disk().object_folder(without_credentials(url_) + "\n" + identity + "\nsize " +
                                                       std::to_string(size()) + "\nblock " +
                                                       std::to_string(kBlockBytes) + "\n");
    });
    return cache_folder_;
}

std::vector<std::string> RemoteObject::precondition_headers() const {
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

void RemoteObject::fetch(std::uint64_t offset, std::size_t length, char* dst) const {
    if (changed_) throw IoError(name(), "changed on the server since it was mounted; mount it again to read it");
    Request request;
    request.ranged = true;
    request.first = offset;
    request.last = offset + length - 1;
    request.headers = precondition_headers();
    request.into = dst;
    request.capacity = length;
    for (int attempt = 0;; ++attempt) {
        {
            const std::lock_guard lock(mutex_);
            request.url = location_.empty() ? url_ : location_;
        }
        const bool redirected_before = request.url != url_;
        Response response;
        try {
            response = context_->http().send(request);
        } catch (const HttpError& error) {
            throw IoError(name(), error.what());
        }
        if (response.status == 206) {
            if (!identity_.etag.empty() && !response.etag.empty() && response.etag != identity_.etag) {
                changed("its ETag is now " + response.etag + ", was " + identity_.etag);
            }
            const auto total = response.total_size();
            if (total && *total != size()) {
                changed("its size is now " + std::to_string(*total) + ", was " + std::to_string(size()));
            }
            if (response.body_bytes != length) {
                throw IoError(name(), "the server sent " + std::to_string(response.body_bytes) +
                                          " bytes for a range of " + std::to_string(length));
            }
            if (response.url != url_) {
                const std::lock_guard lock(mutex_);
                location_ = response.url;
            }
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
        throw IoError(name(), response.status_text());
    }
}

void RemoteObject::changed(const std::string& how) const {
    const std::string what = "changed on the server since it was mounted (" + how + ")";
    if (!changed_.exchange(true)) {
        context_->counters().objects_changed.add(1);
        log_warning(name() + ": " + what + "; its reads fail with EIO until it is mounted again");
    }
    throw IoError(name(), what);
}

}  // namespace tensorfs::remote
