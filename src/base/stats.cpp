#include "tensorfs/stats.hpp"

#include <unistd.h>

#include <tuple>

#include <nlohmann/json.hpp>

namespace tensorfs {
namespace {

// stats.json has a fixed size: a longer SOURCE is cut there.
constexpr std::size_t kLongestSourceShown = 512;

nlohmann::ordered_json kind_json(const FileKindCounters& kind) {
    return {{"reads", kind.reads.get()}, {"bytes", kind.bytes.get()}};
}

nlohmann::ordered_json by_dtype_json(const DtypeCounters& counters) {
    nlohmann::ordered_json by_dtype = nlohmann::ordered_json::object();
    counters.for_each([&](const std::string& dtype, const Counter& counter) { by_dtype[dtype] = counter.get(); });
    return by_dtype;
}

nlohmann::ordered_json requests_json(const FuseRequestCounters& requests) {
    nlohmann::ordered_json by_kind = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < kFuseRequestNames.size(); ++i) {
        by_kind[std::string(kFuseRequestNames[i])] = requests.get(i);
    }
    return by_kind;
}

}  // namespace

void RemoteCounters::set_memory(const Memory& memory) {
    // A sequence lock: the version is odd while the gauges change, and a reader that saw it move reads again.
    // Adding (not storing) keeps it even once writers are done, should two ever overlap.
    memory_version_.fetch_add(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    bytes_in_flight.set(memory.in_flight);
    bytes_in_memory.set(memory.in_memory);
    bytes_queued_for_disk.set(memory.queued_for_disk);
    memory_version_.fetch_add(1, std::memory_order_release);
}

RemoteCounters::Memory RemoteCounters::memory() const {
    for (;;) {
        const std::uint64_t version = memory_version_.load(std::memory_order_acquire);
        Memory memory{bytes_in_flight.get(), bytes_in_memory.get(), bytes_queued_for_disk.get()};
        std::atomic_thread_fence(std::memory_order_acquire);
        if (version % 2 == 0 && memory_version_.load(std::memory_order_relaxed) == version) return memory;
    }
}

nlohmann::ordered_json RemoteCounters::to_json() const {
    const Memory memory = this->memory();
    return {{"requests", requests.get()},
            {"bytes_fetched", bytes_fetched.get()},
            {"retries", retries.get()},
            {"unanswered_requests", unanswered.get()},
            {"disk_cache_hits", disk_cache_hits.get()},
            {"disk_cache_misses", disk_cache_misses.get()},
            {"objects_changed", objects_changed.get()},
            {"timeout_ms", timeout_ms.get()},
            {"readahead",
             {{"window_bytes", window_bytes.get()},
              {"connections_in_use", connections_in_use.get()},
              {"bytes_in_flight", memory.in_flight},
              {"limit_bytes", readahead_limit.get()},
              {"max_connections", max_connections.get()},
              {"first_byte_us", first_byte_us.get()},
              {"round_trip_us", round_trip_us.get()},
              {"connection_bytes_per_second", connection_rate.get()},
              {"link_bytes_per_second", link_rate.get()}}},
            {"memory",
             {{"in_flight_bytes", memory.in_flight},
              {"recent_blocks_bytes", memory.in_memory},
              {"queued_for_disk_bytes", memory.queued_for_disk},
              {"budget_bytes", memory_budget.get()}}}};
}

void LatencyHistogram::observe(std::uint64_t nanoseconds) {
    std::size_t bucket = 0;
    while (bucket < kBoundNanoseconds.size() && nanoseconds > kBoundNanoseconds[bucket]) ++bucket;
    buckets_[bucket].add(1);
    nanoseconds_.add(nanoseconds);
}

Counter& DtypeCounters::of(std::string_view dtype) {
    const auto found = counters_.find(dtype);
    if (found != counters_.end()) return found->second;
    return counters_.emplace(std::piecewise_construct, std::forward_as_tuple(dtype), std::forward_as_tuple())
        .first->second;
}

void DtypeCounters::for_each(const std::function<void(const std::string&, const Counter&)>& visit) const {
    for (const auto& [dtype, counter] : counters_) visit(dtype, counter);
}

std::string Stats::render_json() const {
    const nlohmann::ordered_json stats = {
        {"reads",
         {{"raw", kind_json(raw)},
          {"dequant.f32", kind_json(dequant_f32)},
          {"dequant.npy", kind_json(dequant_npy)},
          {"dequant.bf16", kind_json(dequant_bf16)},
          {"dequant.f16", kind_json(dequant_f16)},
          {"model.safetensors", kind_json(model_safetensors)},
          {"json", kind_json(json)},
          {"source_files", kind_json(source_files)}}},
        {"read_errors", read_errors.get()},
        {"reply_errors", reply_errors.get()},
        {"cache",
         {{"hits", cache_hits.get()},
          {"misses", cache_misses.get()},
          {"waits", cache_waits.get()},
          {"evictions", cache_evictions.get()},
          {"decoded_ahead", cache_decoded_ahead.get()},
          {"bytes_in_use", cache_bytes_in_use.load(std::memory_order_relaxed)},
          {"budget", cache_budget},
          {"chunk_bytes", cache_chunk_bytes}}},
        {"decode",
         {{"kernels", decode_kernels},
          {"workers", decode_workers},
          {"bytes", bytes_decoded.get()},
          {"seconds", decode_nanoseconds.get() / 1e9},
          {"bytes_by_dtype", by_dtype_json(bytes_decoded_by_dtype)}}},
        {"remote", remote->to_json()},
        {"fuse_requests", requests_json(requests)},
        {"daemon",
         {{"pid", ::getpid()},
          {"started_unix_seconds", started_unix_seconds},
          {"source", source.substr(0, kLongestSourceShown)}}},
    };
    std::string text = stats.dump(2);
    // A model of many dtypes could outgrow the fixed size indented: the same document without indentation then.
    if (text.size() + 1 > kStatsJsonSize) text = stats.dump();
    if (text.size() + 1 < kStatsJsonSize) text.append(kStatsJsonSize - 1 - text.size(), ' ');
    text += '\n';
    return text;
}

}  // namespace tensorfs
