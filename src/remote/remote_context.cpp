#include "remote_context.hpp"

namespace tensorfs::remote {
namespace {

// Blocks kept in memory across all objects of a source: the read-ahead window and the blocks being read.
constexpr std::size_t kRecentBytes = std::size_t{128} << 20;

}  // namespace

RemoteContext::RemoteContext(const SourceOptions& options, std::vector<Credentials> credentials,
                             ExplainRefusal explain)
    : counters_(options.counters != nullptr ? options.counters : std::make_shared<RemoteCounters>()),
      http_(*counters_, std::move(credentials)),
      disk_(options.cache_dir.empty() ? default_cache_dir() : options.cache_dir, options.disk_cache_size),
      explain_(std::move(explain)) {}

bool RemoteContext::has_or_fetching(std::uint64_t serial, std::uint64_t index) {
    const Key key{serial, index};
    const std::lock_guard lock(mutex_);
    return recent_index_.count(key) != 0 || in_flight_.count(key) != 0;
}

void RemoteContext::keep(const Key& key, BlockPtr block) {
    const std::lock_guard lock(mutex_);
    in_flight_.erase(key);
    if (recent_index_.count(key) != 0) return;
    recent_bytes_ += block->length;
    recent_.emplace_front(key, std::move(block));
    recent_index_.emplace(key, recent_.begin());
    while (recent_bytes_ > kRecentBytes && recent_.size() > 1) {
        recent_bytes_ -= recent_.back().second->length;
        recent_index_.erase(recent_.back().first);
        recent_.pop_back();
    }
}

}  // namespace tensorfs::remote
