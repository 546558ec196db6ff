#include "remote_context.hpp"

#include <algorithm>

namespace tensorfs::remote {
namespace {

// The least memory budget: a few blocks in flight and one being read.
constexpr std::uint64_t kLeastBudget = std::uint64_t{8} << 20;

}  // namespace

RemoteContext::~RemoteContext() { disk_.finish_writes(); }

RemoteContext::RemoteContext(const SourceOptions& options, std::vector<Credentials> credentials,
                             ExplainRefusal explain)
    : counters_(options.counters != nullptr ? options.counters : std::make_shared<RemoteCounters>()),
      http_(*counters_, std::move(credentials)),
      // The disk's queue holds a quarter of the memory budget at most; the read-ahead's fetches the rest.
      disk_(options.cache_dir.empty() ? default_cache_dir() : options.cache_dir, options.disk_cache_size,
            [this](std::int64_t bytes) { queued_for_disk(bytes); },
            static_cast<std::size_t>(std::min<std::uint64_t>(DiskCache::kMaxQueuedBytes,
                                                             std::max(options.memory_budget, kLeastBudget) / 4))),
      explain_(std::move(explain)),
      max_connections_(std::clamp(options.max_connections, 1u, kMostConnections)),
      memory_budget_(std::max(options.memory_budget, kLeastBudget)),
      readahead_limit_(std::min(options.readahead, memory_budget_ / 2)) {
    counters_->memory_budget.set(static_cast<std::int64_t>(memory_budget_));
    counters_->max_connections.set(max_connections_);
    counters_->readahead_limit.set(static_cast<std::int64_t>(readahead_limit_));
}

std::shared_future<BlockPtr> RemoteContext::find(std::uint64_t serial, std::uint64_t index) {
    const Key key{serial, index};
    const std::lock_guard lock(mutex_);
    if (const auto found = recent_index_.find(key); found != recent_index_.end()) {
        recent_.splice(recent_.begin(), recent_, found->second);
        std::promise<BlockPtr> ready;
        ready.set_value(found->second->second);
        return ready.get_future().share();
    }
    if (const auto flying = in_flight_.find(key); flying != in_flight_.end()) return flying->second;
    return {};
}

RemoteContext::Claim RemoteContext::claim(std::uint64_t serial, std::uint64_t first, std::uint64_t count,
                                          std::size_t bytes) {
    Claim claim;
    claim.serial = serial;
    claim.first = first;
    const std::lock_guard lock(mutex_);
    for (std::uint64_t index = first; index < first + count; ++index) {
        const Key key{serial, index};
        if (recent_index_.count(key) != 0 || in_flight_.count(key) != 0) break;
        claim.promises.emplace_back();
        in_flight_.emplace(key, claim.promises.back().get_future().share());
    }
    if (!claim.promises.empty()) {
        claim.bytes = bytes;
        in_flight_bytes_ += bytes;
        trim();
        show_memory();
    }
    return claim;
}

bool RemoteContext::claim_ahead(std::uint64_t serial, std::uint64_t first, std::uint64_t count, std::size_t bytes,
                                Claim& claim) {
    {
        const std::lock_guard lock(mutex_);
        if (connections_ >= max_connections_ || held() + bytes > memory_budget_ - memory_budget_ / 4) return false;
        ++connections_;
        counters_->connections_in_use.set(connections_);
    }
    claim = this->claim(serial, first, count, bytes);
    claim.uses_connection = true;
    if (claim.promises.empty()) end_claim(claim);
    return true;
}

void RemoteContext::deliver(Claim& claim, const std::vector<BlockPtr>& blocks) {
    {
        const std::lock_guard lock(mutex_);
        for (std::size_t i = 0; i < claim.promises.size(); ++i) {
            const Key key{claim.serial, claim.first + i};
            in_flight_.erase(key);
            if (recent_index_.count(key) != 0) continue;
            recent_bytes_ += blocks[i]->length;
            recent_.emplace_front(key, blocks[i]);
            recent_index_.emplace(key, recent_.begin());
        }
    }
    for (std::size_t i = 0; i < claim.promises.size(); ++i) claim.promises[i].set_value(blocks[i]);
    end_claim(claim);
}

void RemoteContext::consumed(std::uint64_t serial, std::uint64_t index) {
    const std::lock_guard lock(mutex_);
    if (const auto found = recent_index_.find(Key{serial, index}); found != recent_index_.end()) {
        recent_.splice(recent_.end(), recent_, found->second);
    }
}

void RemoteContext::give_up(Claim& claim, std::exception_ptr error) {
    {
        const std::lock_guard lock(mutex_);
        for (std::size_t i = 0; i < claim.promises.size(); ++i) in_flight_.erase(Key{claim.serial, claim.first + i});
    }
    for (auto& promise : claim.promises) {
        if (error) {
            promise.set_exception(error);
        } else {
            promise.set_value(nullptr);
        }
    }
    end_claim(claim);
}

void RemoteContext::end_claim(Claim& claim) {
    const std::lock_guard lock(mutex_);
    in_flight_bytes_ -= claim.bytes;
    claim.bytes = 0;
    claim.promises.clear();
    if (claim.uses_connection) {
        --connections_;
        counters_->connections_in_use.set(connections_);
        claim.uses_connection = false;
    }
    trim();
    show_memory();
}

void RemoteContext::keep_piece(std::uint64_t serial, std::uint64_t index, Piece piece) {
    const Key key{serial, index};
    const std::lock_guard lock(mutex_);
    if (piece_index_.count(key) != 0) return;  // the one kept first is as good
    piece_bytes_ += piece.bytes.size();
    pieces_.emplace_front(key, std::move(piece));
    piece_index_.emplace(key, pieces_.begin());
    while (piece_bytes_ > memory_budget_ / 8) {
        piece_bytes_ -= pieces_.back().second.bytes.size();
        piece_index_.erase(pieces_.back().first);
        pieces_.pop_back();
    }
    trim();
    show_memory();
}

std::optional<RemoteContext::Piece> RemoteContext::take_piece(std::uint64_t serial, std::uint64_t index) {
    const std::lock_guard lock(mutex_);
    const auto found = piece_index_.find(Key{serial, index});
    if (found == piece_index_.end()) return std::nullopt;
    Piece piece = std::move(found->second->second);
    pieces_.erase(found->second);
    piece_index_.erase(found);
    piece_bytes_ -= piece.bytes.size();
    show_memory();
    return piece;
}

void RemoteContext::measured(std::uint64_t bytes, std::uint64_t first_byte_us, std::uint64_t total_us) {
    if (total_us <= first_byte_us) return;
    // Recent averages: each answer weighs an eighth.
    const auto average = [](double before, double now) { return before == 0 ? now : before + (now - before) / 8; };
    const std::lock_guard lock(mutex_);
    first_byte_us_ = average(first_byte_us_, static_cast<double>(first_byte_us));
    const double transfer_us = static_cast<double>(total_us - first_byte_us);
    connection_rate_ = average(connection_rate_, static_cast<double>(bytes) * 1e6 / transfer_us);
    counters_->first_byte_us.set(static_cast<std::int64_t>(first_byte_us_));
    counters_->connection_rate.set(static_cast<std::int64_t>(connection_rate_));
}

void RemoteContext::queued_for_disk(std::int64_t bytes) {
    const std::lock_guard lock(mutex_);
    queued_bytes_ += bytes;
    trim();
    show_memory();
}

std::uint64_t RemoteContext::held() const {
    return in_flight_bytes_ + piece_bytes_ + static_cast<std::uint64_t>(std::max<std::int64_t>(0, queued_bytes_));
}

void RemoteContext::trim() {
    while (!recent_.empty() && recent_bytes_ + held() > memory_budget_) {
        recent_bytes_ -= recent_.back().second->length;
        recent_index_.erase(recent_.back().first);
        recent_.pop_back();
    }
}

void RemoteContext::show_memory() {
    counters_->bytes_in_flight.set(static_cast<std::int64_t>(in_flight_bytes_));
    counters_->bytes_in_memory.set(static_cast<std::int64_t>(recent_bytes_ + piece_bytes_));
    counters_->bytes_queued_for_disk.set(queued_bytes_);
}

}  // namespace tensorfs::remote
