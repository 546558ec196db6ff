// What all remote objects of one source share: the HTTP client, the disk cache, the blocks recently fetched (in
// memory, so that the many 128 KiB - 1 MiB reads inside one block cost one fetch) and the fetches in flight (so
// that a block wanted by a reader and by the read-ahead at once is fetched once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "block.hpp"
#include "disk_cache.hpp"
#include "http_client.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs::remote {

// The line that tells a user why a server refused a request: the server's reason (HTTP status, S3's error code),
// where it came from, and what to do about it (set HF_TOKEN, check the AWS credentials...).
using ExplainRefusal = std::function<std::string(const Response&)>;

class RemoteContext {
public:
    RemoteContext(const SourceOptions& options, std::vector<Credentials> credentials, ExplainRefusal explain);

    HttpClient& http() { return http_; }
    DiskCache& disk() { return disk_; }
    RemoteCounters& counters() { return *counters_; }
    std::string refusal(const Response& response) const { return explain_(response); }

    // A number for each object, naming it in the keys below.
    std::uint64_t next_serial() { return serial_.fetch_add(1); }

    // Block `index` of object `serial`: from memory, or from the fetch already in flight, or from `load` (run on
    // this thread, its result kept in memory). Exceptions of `load` reach every caller that waited for it.
    template <typename Load>
    BlockPtr block(std::uint64_t serial, std::uint64_t index, Load&& load);

    // Whether block `index` of object `serial` is in memory or on its way.
    bool has_or_fetching(std::uint64_t serial, std::uint64_t index);

private:
    using Key = std::pair<std::uint64_t, std::uint64_t>;
    void keep(const Key& key, BlockPtr block);

    std::shared_ptr<RemoteCounters> counters_;
    HttpClient http_;
    DiskCache disk_;
    ExplainRefusal explain_;
    std::atomic<std::uint64_t> serial_{0};

    std::mutex mutex_;
    std::map<Key, std::shared_future<BlockPtr>> in_flight_;
    std::list<std::pair<Key, BlockPtr>> recent_;  // most recently used first
    std::map<Key, std::list<std::pair<Key, BlockPtr>>::iterator> recent_index_;
    std::size_t recent_bytes_ = 0;
};

template <typename Load>
BlockPtr RemoteContext::block(std::uint64_t serial, std::uint64_t index, Load&& load) {
    const Key key{serial, index};
    std::promise<BlockPtr> promise;
    {
        std::unique_lock lock(mutex_);
        if (const auto found = recent_index_.find(key); found != recent_index_.end()) {
            recent_.splice(recent_.begin(), recent_, found->second);
            return found->second->second;
        }
        if (const auto flying = in_flight_.find(key); flying != in_flight_.end()) {
            const std::shared_future<BlockPtr> future = flying->second;
            lock.unlock();
            return future.get();
        }
        in_flight_.emplace(key, promise.get_future().share());
    }
    try {
        BlockPtr loaded = load();
        keep(key, loaded);
        promise.set_value(loaded);
        return loaded;
    } catch (...) {
        {
            const std::lock_guard lock(mutex_);
            in_flight_.erase(key);
        }
        promise.set_exception(std::current_exception());
        throw;
    }
}

}  // namespace tensorfs::remote
