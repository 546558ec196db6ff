#include "tensorfs/stats.hpp"

#include <nlohmann/json.hpp>

namespace tensorfs {
namespace {

nlohmann::ordered_json kind_json(const FileKindCounters& kind) {
    return {{"reads", kind.reads.get()}, {"bytes", kind.bytes.get()}};
}

}  // namespace

std::string Stats::render_json() const {
    const nlohmann::ordered_json stats = {
        {"reads",
         {{"raw", kind_json(raw)},
          {"dequant.f32", kind_json(dequant_f32)},
          {"dequant.npy", kind_json(dequant_npy)},
          {"json", kind_json(json)}}},
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
        {"decode", {{"bytes", bytes_decoded.get()}, {"seconds", decode_nanoseconds.get() / 1e9}}},
    };
    std::string text = stats.dump(2);
    if (text.size() + 1 < kStatsJsonSize) text.append(kStatsJsonSize - 1 - text.size(), ' ');
    text += '\n';
    return text;
}

}  // namespace tensorfs
