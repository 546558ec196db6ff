// One file on a web server, the Hub or an object store, read by HTTP range requests.
//
// Opening it asks for its first bytes (which the parsers read first anyway) and records its size and identity
// (ETag, else Last-Modified). Header reads fetch exactly the ranges the parsers ask for. Reads of tensors go by
// blocks of kBlockBytes, aligned, through the shared memory of recent blocks and the disk cache; a sequential
// reader gets the next blocks fetched ahead, never past the end of the region (the tensor) it reads. Every range
// request carries If-Match and If-Range with the recorded ETag, and every answer is checked against the recorded
// identity and size: an object that changed fails the read with IoError, never serving old and new bytes mixed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "remote_context.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::remote {

// The unit of fetching and of the disk cache (see docs/benchmarks.md for the measurement behind it).
inline constexpr std::size_t kBlockBytes = std::size_t{8} << 20;

class RemoteObject : public SourceObject, public std::enable_shared_from_this<RemoteObject> {
public:
    // Opens the object at `url`, named `name` in messages. nullptr when the server says it does not exist (404,
    // 410). Throws InvalidSource naming it when it cannot be reached, refuses the credentials or cannot serve
    // byte ranges.
    static std::shared_ptr<RemoteObject> open(std::shared_ptr<RemoteContext> context, std::string name,
                                              std::string url);

    void read(std::uint64_t offset, std::size_t length, void* dst) const override;
    void read_in_region(std::uint64_t offset, std::size_t length, void* dst, std::uint64_t region_begin,
                        std::uint64_t region_end) const override;

    // What opening it learned; public for the constructor's sake (open() is the way to make one).
    struct Identity {
        std::uint64_t size = 0;
        std::string etag;            // empty when the server gave none
        std::string last_modified;   // empty when the server gave none
        timespec modified{};
    };
    RemoteObject(std::shared_ptr<RemoteContext> context, std::string name, std::string url, Identity identity,
                 std::string head);

private:
    BlockPtr block(std::uint64_t index) const;
    // From the disk cache or the network; `keep_on_disk` tells that it came from the network and has a place in
    // the disk cache.
    BlockPtr load_block(std::uint64_t index, bool& keep_on_disk) const;
    void read_ahead(std::uint64_t first, std::uint64_t last) const;
    // Whether a read at `offset` continues an earlier one (and records where this one ends).
    bool continues_a_read(std::uint64_t offset, std::uint64_t end) const;
    // Fetches bytes [offset, offset + length) into `dst`, checking that the object is still the one opened.
    void fetch(std::uint64_t offset, std::size_t length, char* dst) const;
    [[noreturn]] void changed(const std::string& how) const;
    std::vector<std::string> precondition_headers() const;
    const std::optional<std::filesystem::path>& cache_folder() const;

    std::shared_ptr<RemoteContext> context_;
    const std::string url_;
    const Identity identity_;
    const std::uint64_t serial_;

    // The first bytes, fetched when opened, for the parsers' reads; let go at the first read of a tensor (parsing
    // is over by then), so that a model of thousands of shards does not keep 64 KiB of each.
    mutable std::mutex head_mutex_;
    mutable std::string head_;
    mutable std::atomic<bool> head_dropped_{false};

    mutable std::mutex mutex_;
    mutable std::string location_;      // where `url_` last redirected to: asked directly until it fails
    mutable std::vector<std::uint64_t> recent_ends_;  // where recent reads ended, for sequential detection
    mutable std::size_t next_end_ = 0;
    mutable std::once_flag cache_folder_once_;
    mutable std::optional<std::filesystem::path> cache_folder_;
    mutable std::atomic<bool> changed_{false};
};

}  // namespace tensorfs::remote
