// The range requests of one remote object, each made only on the object that was opened: every range request
// carries If-Match and If-Range with the recorded ETag, and every answer is checked against the recorded identity
// and size (object_opening.hpp): an object that changed fails the read with IoError, never serving old and new
// bytes mixed.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "object_opening.hpp"
#include "read_deadline.hpp"
#include "remote_context.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::remote {

class RangeRequests {
public:
    // Requests for `object`, at `url`, opened with `identity` (all three the object's, which outlives this), where the
    // first request was redirected to `location` (empty when it was not).
    RangeRequests(RemoteContext& context, const SourceObject& object, const std::string& url, const Identity& identity,
                  std::string location);

    // Fetches the bytes from `offset` on that fill the buffers of `into`, one after the other, by `deadline`, checking
    // that the object is still the one opened.
    void fetch(std::uint64_t offset, std::vector<std::span<char>> into, Deadline deadline) const;

private:
    [[noreturn]] void changed(const std::string& how) const;
    std::vector<std::string> precondition_headers() const;

    RemoteContext& context_;
    const SourceObject& object_;
    const std::string& url_;
    const Identity& identity_;
    mutable std::mutex mutex_;
    mutable std::string location_;  // where `url_` last redirected to: asked directly until it fails
    mutable std::atomic<bool> changed_{false};
};

}  // namespace tensorfs::remote
