#include "remote_context.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace tensorfs::remote {
namespace {

// The least memory budget: a few blocks in flight and one being read.
constexpr std::uint64_t kLeastBudget = std::uint64_t{8} << 20;
// The least window the measured rate × round trip may set (a few ranges): a link measured while its reader was
// slow opens again within a few samples once the reader speeds up.
constexpr std::uint64_t kLeastWindow = std::uint64_t{16} << 20;

std::uint64_t now_us() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
}

std::uint64_t memory_budget_of(const SourceOptions& options) { return std::max(options.memory_budget, kLeastBudget); }

}  // namespace

std::uint64_t readahead_limit_of(const SourceOptions& options) {
    return std::min(options.readahead, memory_budget_of(options) / 2);
}

RemoteContext::~RemoteContext() { disk_.finish_writes(); }

RemoteContext::RemoteContext(const SourceOptions& options, std::shared_ptr<CredentialSource> credentials,
                             ExplainRefusal explain)
    : counters_(options.counters != nullptr ? options.counters : std::make_shared<RemoteCounters>()),
      http_(*counters_, std::move(credentials), options.timeout, RequestSettings{options.proxy, options.headers}),
      // The disk's queue holds a quarter of the memory budget at most; the read-ahead's fetches the rest.
      disk_(options.cache_dir.empty() ? default_cache_dir() : options.cache_dir, options.disk_cache_size,
            [this](const BlockPtr& block, bool queued) { queued_for_disk(block, queued); },
            static_cast<std::size_t>(std::min<std::uint64_t>(DiskCache::kMaxQueuedBytes,
                                                             std::max(options.memory_budget, kLeastBudget) / 4)),
            options.disk_cache_writes_direct),
      explain_(std::move(explain)),
      max_connections_(std::clamp(options.max_connections, 1u, kMostConnections)),
      timeout_(options.timeout),
      memory_budget_(memory_budget_of(options)),
      readahead_limit_(readahead_limit_of(options)),
      // Freed buffers are kept for reuse up to the budget: a buffer is mapped only when none is kept, so the
      // buffers mapped never outnumber the most held at once, and a cold load stops mapping after its start.
      buffers_(std::make_shared<BlockBuffers>(kBlockBytes, memory_budget_)) {
    counters_->memory_budget.set(static_cast<std::int64_t>(memory_budget_));
    counters_->max_connections.set(max_connections_);
    counters_->readahead_limit.set(static_cast<std::int64_t>(readahead_limit_));
    counters_->timeout_ms.set(static_cast<std::int64_t>(timeout_.count()));
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
    if (const auto leaving = leaving_.find(key); leaving != leaving_.end()) {
        std::promise<BlockPtr> ready;
        ready.set_value(leaving->second);
        return ready.get_future().share();
    }
    return {};
}

RemoteContext::Claim RemoteContext::claim(std::uint64_t serial, std::uint64_t first, std::uint64_t count,
                                          std::size_t bytes) {
    std::unique_lock lock(mutex_);
    // What is in flight or queued for the disk frees itself (each fetch ends, the disk's writer writes by itself).
    room_.wait(lock, [&] {
        return pinned() + bytes <= memory_budget_ || (in_flight_bytes_ == 0 && queued_bytes_ == 0) ||
               !claimable(Key{serial, first});
    });
    return claim_locked(serial, first, count, bytes);
}

RemoteContext::Claim RemoteContext::claim_fetched(std::uint64_t serial, std::uint64_t first, std::uint64_t count,
                                                  std::size_t bytes) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] {
        return pinned() + bytes <= memory_budget_ || queued_bytes_ == 0 || !claimable(Key{serial, first});
    });
    return claim_locked(serial, first, count, bytes);
}

bool RemoteContext::claimable(const Key& key) const {
    return recent_index_.count(key) == 0 && in_flight_.count(key) == 0 && leaving_.count(key) == 0;
}

RemoteContext::Claim RemoteContext::claim_locked(std::uint64_t serial, std::uint64_t first, std::uint64_t count,
                                                 std::size_t bytes) {
    Claim claim;
    claim.serial = serial;
    claim.first = first;
    for (std::uint64_t index = first; index < first + count; ++index) {
        const Key key{serial, index};
        if (!claimable(key)) break;
        claim.promises.emplace_back();
        in_flight_.emplace(key, claim.promises.back().get_future().share());
    }
    if (!claim.promises.empty()) {
        claim.bytes = bytes;
        in_flight_bytes_ += bytes;
        link_.fetch_started(now_us());
        trim();
        memory_changed();
    }
    return claim;
}

bool RemoteContext::claim_ahead(std::uint64_t serial, std::uint64_t first, std::uint64_t count, std::size_t bytes,
                                Claim& claim) {
    {
        const std::lock_guard lock(mutex_);
        // Against what trimming cannot free: a block kept for readers but still queued for the disk counts, or the
        // read-ahead would go on fetching while a slow disk holds the blocks it fetched before.
        if (connections_ >= max_connections_ || pinned() + bytes > memory_budget_ - memory_budget_ / 4) return false;
        ++connections_;
        counters_->connections_in_use.set(connections_);
        claim = claim_locked(serial, first, count, bytes);
    }
    claim.uses_connection = true;
    if (claim.promises.empty()) end_claim(claim);
    return true;
}

void RemoteContext::deliver(Claim& claim, const std::vector<BlockPtr>& blocks, bool to_disk) {
    {
        const std::lock_guard lock(mutex_);
        for (std::size_t i = 0; i < claim.promises.size(); ++i) {
            const Key key{claim.serial, claim.first + i};
            in_flight_.erase(key);
            if (blocks[i] == nullptr) continue;
            if (recent_index_.count(key) == 0) {
                keep_recent(blocks[i]);
                recent_.emplace_front(key, blocks[i]);
                recent_index_.emplace(key, recent_.begin());
            }
            if (to_disk) count_queued(blocks[i], true);
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
    if (claim.bytes > 0) {
        link_.fetch_ended(now_us(), claim.fetched_bytes);
        show_link();
    }
    in_flight_bytes_ -= claim.bytes;
    claim.bytes = 0;
    claim.promises.clear();
    if (claim.uses_connection) {
        --connections_;
        counters_->connections_in_use.set(connections_);
        claim.uses_connection = false;
    }
    trim();
    memory_changed();
}

void RemoteContext::no_answer() {
    counters_->unanswered.add(1);
    last_unanswered_ = std::chrono::steady_clock::now().time_since_epoch().count();
    any_unanswered_ = true;
}

std::optional<std::chrono::steady_clock::duration> RemoteContext::silence() const {
    if (!any_unanswered_.load(std::memory_order_relaxed)) return std::nullopt;
    const std::chrono::steady_clock::time_point last{std::chrono::steady_clock::duration(last_unanswered_.load())};
    const auto ago = std::chrono::steady_clock::now() - last;
    if (ago >= timeout_) return std::nullopt;  // one timeout later: asked again
    return ago;
}

void RemoteContext::answered() {
    if (any_unanswered_.load(std::memory_order_relaxed)) any_unanswered_ = false;
}

void RemoteContext::keep_piece(std::uint64_t serial, std::uint64_t index, Piece piece) {
    const Key key{serial, index};
    const std::lock_guard lock(mutex_);
    if (const auto found = piece_index_.find(key); found != piece_index_.end()) {
        piece_bytes_ -= found->second->second.bytes.size();
        piece = merged(std::move(found->second->second), std::move(piece));
        pieces_.erase(found->second);
        piece_index_.erase(found);
    }
    piece_bytes_ += piece.bytes.size();
    pieces_.emplace_front(key, std::move(piece));
    piece_index_.emplace(key, pieces_.begin());
    while (piece_bytes_ > memory_budget_ / 8) {
        piece_bytes_ -= pieces_.back().second.bytes.size();
        piece_index_.erase(pieces_.back().first);
        pieces_.pop_back();
    }
    trim();
    memory_changed();
}

std::optional<Piece> RemoteContext::take_piece(std::uint64_t serial, std::uint64_t index) {
    const std::lock_guard lock(mutex_);
    const auto found = piece_index_.find(Key{serial, index});
    if (found == piece_index_.end()) return std::nullopt;
    Piece piece = std::move(found->second->second);
    pieces_.erase(found->second);
    piece_index_.erase(found);
    piece_bytes_ -= piece.bytes.size();
    memory_changed();
    return piece;
}

std::size_t RemoteContext::read_piece(std::uint64_t serial, std::uint64_t index, std::size_t from, std::size_t length,
                                      char* dst) {
    const std::lock_guard lock(mutex_);
    const auto found = piece_index_.find(Key{serial, index});
    if (found == piece_index_.end()) return 0;
    const Piece& piece = found->second->second;
    if (from < piece.begin || from >= piece.end()) return 0;
    const std::size_t count = std::min(length, piece.end() - from);
    std::memcpy(dst, piece.bytes.data() + (from - piece.begin), count);
    return count;
}

std::optional<std::size_t> RemoteContext::piece_begin(std::uint64_t serial, std::uint64_t index) {
    const std::lock_guard lock(mutex_);
    const auto found = piece_index_.find(Key{serial, index});
    if (found == piece_index_.end()) return std::nullopt;
    return found->second->second.begin;
}

void RemoteContext::measured(std::uint64_t bytes, std::uint64_t first_byte_us, std::uint64_t total_us) {
    const std::lock_guard lock(mutex_);
    link_.answered(bytes, first_byte_us, total_us);
    show_link();
}

std::uint64_t RemoteContext::window_ceiling() {
    const std::lock_guard lock(mutex_);
    return link_.window_ceiling(kLeastWindow, readahead_limit_);
}

void RemoteContext::show_link() {
    counters_->first_byte_us.set(static_cast<std::int64_t>(link_.first_byte_us()));
    counters_->round_trip_us.set(static_cast<std::int64_t>(link_.round_trip_us()));
    counters_->connection_rate.set(static_cast<std::int64_t>(link_.connection_rate()));
    counters_->link_rate.set(static_cast<std::int64_t>(link_.link_rate()));
}

void RemoteContext::queued_for_disk(const BlockPtr& block, bool queued) {
    const std::lock_guard lock(mutex_);
    count_queued(block, queued);
    trim();
    memory_changed();
}

void RemoteContext::count_queued(const BlockPtr& block, bool queued) {
    if (block->queued_for_disk == queued) return;  // counted when delivered, before the disk cache said so
    block->queued_for_disk = queued;
    if (queued) {
        queued_bytes_ += block->length;
    } else {
        queued_bytes_ -= block->length;
    }
    if (!block->in_recent) {
        if (queued) {
            queued_only_bytes_ += block->length;
            leaving_.emplace(Key{block->serial, block->index}, block);
        } else {
            queued_only_bytes_ -= block->length;
            leaving_.erase(Key{block->serial, block->index});
        }
    }
}

void RemoteContext::keep_recent(const BlockPtr& block) {
    block->in_recent = true;
    recent_bytes_ += block->length;
    if (block->queued_for_disk) {
        queued_only_bytes_ -= block->length;
        leaving_.erase(Key{block->serial, block->index});
    }
}

void RemoteContext::drop_recent(const BlockPtr& block) {
    block->in_recent = false;
    recent_bytes_ -= block->length;
    if (block->queued_for_disk) {
        queued_only_bytes_ += block->length;
        leaving_.emplace(Key{block->serial, block->index}, block);
    }
}

std::uint64_t RemoteContext::held() const { return in_flight_bytes_ + piece_bytes_ + queued_only_bytes_; }

std::uint64_t RemoteContext::pinned() const { return in_flight_bytes_ + piece_bytes_ + queued_bytes_; }

void RemoteContext::trim() {
    while (!recent_.empty() && recent_bytes_ + held() > memory_budget_) {
        drop_recent(recent_.back().second);
        recent_index_.erase(recent_.back().first);
        recent_.pop_back();
    }
}

void RemoteContext::memory_changed() {
    counters_->set_memory({static_cast<std::int64_t>(in_flight_bytes_),
                           static_cast<std::int64_t>(recent_bytes_ + piece_bytes_),
                           static_cast<std::int64_t>(queued_only_bytes_)});
    room_.notify_all();
}

}  // namespace tensorfs::remote
