// Stats in Prometheus' text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): one uninterrupted group of lines per metric name,
// its # HELP and # TYPE lines first; names with the tensorfs_ prefix, in base units (bytes, seconds), counters
// ending in _total.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <tuple>

#include <nlohmann/json.hpp>

#include "tensorfs/stats.hpp"

namespace tensorfs {
namespace {

// The widest a value is written: a 64-bit count has up to 20 digits; seconds from a 64-bit count of nanoseconds
// up to 21 characters ("18446744073.709551615").
constexpr std::size_t kWidestValue = 21;
// The padding line is at least "#\n".
constexpr std::size_t kPaddingLine = 2;

// A label value may hold any UTF-8, with backslash, double quote and line feed escaped. Bytes that are not UTF-8
// (a path may hold any) become U+FFFD, as a Prometheus parser refuses them.
std::string label_value(std::string_view value) {
    const std::string valid = nlohmann::json::parse(nlohmann::json(std::string(value)).dump(
                                                        -1, ' ', false, nlohmann::json::error_handler_t::replace))
                                  .get<std::string>();
    std::string escaped;
    for (const char c : valid) {
        if (c == '\\' || c == '"') escaped += '\\';
        if (c == '\n') {
            escaped += "\\n";
            continue;
        }
        escaped += c;
    }
    return escaped;
}

std::string label(std::string_view name, std::string_view value) {
    return std::string(name) + "=\"" + label_value(value) + "\"";
}

// Writes the families one after another. In `widest` mode every value is written at the widest it can be, which
// gives the longest text these counters can ever make.
class Exposition {
public:
    Exposition(const std::string& mountpoint, bool widest)
        : mountpoint_(mountpoint.empty() ? std::string() : label("mountpoint", mountpoint)), widest_(widest) {}

    void family(std::string_view name, std::string_view type, std::string_view help) {
        text_ += "# HELP tensorfs_";
        text_ += name;
        text_ += ' ';
        text_ += help;
        text_ += "\n# TYPE tensorfs_";
        text_ += name;
        text_ += ' ';
        text_ += type;
        text_ += '\n';
    }

    // `labels`: name="value" pairs already written, comma-separated, or empty.
    void count(std::string_view name, const std::string& labels, std::uint64_t value) {
        char text[24];
        std::snprintf(text, sizeof text, "%" PRIu64, value);
        sample(name, labels, text);
    }

    void seconds(std::string_view name, const std::string& labels, std::uint64_t nanoseconds) {
        char text[32];
        std::snprintf(text, sizeof text, "%" PRIu64 ".%09" PRIu64, nanoseconds / 1'000'000'000,
                      nanoseconds % 1'000'000'000);
        sample(name, labels, text);
    }

    std::string take() { return std::move(text_); }

private:
    void sample(std::string_view name, const std::string& labels, std::string_view value) {
        text_ += "tensorfs_";
        text_ += name;
        if (!labels.empty() || !mountpoint_.empty()) {
            text_ += '{';
            text_ += mountpoint_;
            if (!labels.empty() && !mountpoint_.empty()) text_ += ',';
            text_ += labels;
            text_ += '}';
        }
        text_ += ' ';
        if (widest_) {
            text_.append(kWidestValue, '9');
        } else {
            text_ += value;
        }
        text_ += '\n';
    }

    std::string text_;
    const std::string mountpoint_;
    const bool widest_;
};

void add_histogram(Exposition& out, const LatencyHistogram& histogram, const std::string& kind) {
    const std::string kind_label = label("kind", kind);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
        cumulative += histogram.in_bucket(i);
        const std::string_view bound = i < LatencyHistogram::kBoundSeconds.size() ? LatencyHistogram::kBoundSeconds[i]
                                                                                 : "+Inf";
        out.count("read_duration_seconds_bucket", kind_label + "," + label("le", bound), cumulative);
    }
    out.seconds("read_duration_seconds_sum", kind_label, histogram.nanoseconds());
    // The sum of the buckets as read, so that it always equals the +Inf bucket.
    out.count("read_duration_seconds_count", kind_label, cumulative);
}

std::string render(const Stats& stats, bool widest) {
    Exposition out(stats.mountpoint, widest);
    const std::pair<const char*, const FileKindCounters*> files[] = {
        {"raw", &stats.raw},
        {"dequant.f32", &stats.dequant_f32},
        {"dequant.npy", &stats.dequant_npy},
        {"dequant.bf16", &stats.dequant_bf16},
        {"dequant.f16", &stats.dequant_f16},
        {"model.safetensors", &stats.model_safetensors},
        {"json", &stats.json},
        {"source_files", &stats.source_files}};
    out.family("reads_total", "counter", "Read requests answered, by the file read.");
    for (const auto& [file, counters] : files) out.count("reads_total", label("file", file), counters->reads.get());
    out.family("read_bytes_total", "counter", "Bytes answered to read requests, by the file read.");
    for (const auto& [file, counters] : files) {
        out.count("read_bytes_total", label("file", file), counters->bytes.get());
    }
    out.family("read_errors_total", "counter",
               "Read requests answered with an error (EIO: the source could not be read).");
    out.count("read_errors_total", "", stats.read_errors.get());
    out.family("reply_errors_total", "counter",
               "Replies the kernel did not take (the reader was interrupted, or a source page could not be copied).");
    out.count("reply_errors_total", "", stats.reply_errors.get());

    out.family("read_duration_seconds", "histogram",
               "Time from a read request's arrival to its reply: raw, the dequant views, the JSON files, "
               "model.safetensors.");
    add_histogram(out, stats.raw_read_latency, "raw");
    add_histogram(out, stats.dequant_read_latency, "dequant");
    add_histogram(out, stats.meta_read_latency, "meta");
    add_histogram(out, stats.model_read_latency, "model");

    const std::pair<const char*, const char*> cache_help[] = {
        {"cache_hits_total", "Chunk lookups of the decode cache that found the chunk (waits included)."},
        {"cache_misses_total", "Chunk lookups of the decode cache that had to decode the chunk."},
        {"cache_waits_total", "Chunk lookups that waited for another thread's decode of the same chunk."},
        {"cache_evictions_total", "Decoded chunks dropped from the cache to make room."},
        {"cache_decoded_ahead_total", "Chunks decoded ahead of a sequential reader."}};
    const Counter* cache_counters[] = {&stats.cache_hits, &stats.cache_misses, &stats.cache_waits,
                                       &stats.cache_evictions, &stats.cache_decoded_ahead};
    for (std::size_t i = 0; i < std::size(cache_help); ++i) {
        out.family(cache_help[i].first, "counter", cache_help[i].second);
        out.count(cache_help[i].first, "", cache_counters[i]->get());
    }
    out.family("cache_used_bytes", "gauge", "Bytes of decoded chunks the cache holds now.");
    out.count("cache_used_bytes", "", stats.cache_bytes_in_use.load(std::memory_order_relaxed));
    out.family("cache_budget_bytes", "gauge", "Bytes of decoded chunks the cache may hold (cache_size).");
    out.count("cache_budget_bytes", "", stats.cache_budget);
    out.family("cache_chunk_bytes", "gauge", "The usual size of a decoded chunk.");
    out.count("cache_chunk_bytes", "", stats.cache_chunk_bytes);

    out.family("decoded_bytes_total", "counter", "Bytes of float32 decoded, by the stored dtype of the tensor.");
    stats.bytes_decoded_by_dtype.for_each([&](const std::string& dtype, const Counter& counter) {
        out.count("decoded_bytes_total", label("dtype", dtype), counter.get());
    });
    out.family("decode_seconds_total", "counter", "Time spent decoding.");
    out.seconds("decode_seconds_total", "", stats.decode_nanoseconds.get());

    const RemoteCounters& remote = *stats.remote;
    const std::tuple<const char*, const char*, const Counter*> remote_counters[] = {
        {"remote_requests_total", "HTTP requests sent for a remote source (retries and redirects count).",
         &remote.requests},
        {"remote_fetched_bytes_total", "Body bytes received for the ranges asked of a remote source.",
         &remote.bytes_fetched},
        {"remote_retries_total", "HTTP requests repeated after a connection error, a 5xx or a 429.", &remote.retries},
        {"remote_unanswered_requests_total",
         "HTTP requests that got no answer by their deadline (each makes the server silent: reads fail fast).",
         &remote.unanswered},
        {"remote_disk_cache_hits_total", "Blocks of a remote source read from the disk cache.",
         &remote.disk_cache_hits},
        {"remote_disk_cache_misses_total", "Blocks of a remote source that had to be fetched.",
         &remote.disk_cache_misses},
        {"remote_objects_changed_total", "Remote objects found changed since the mount (their reads fail).",
         &remote.objects_changed}};
    for (const auto& [name, help, counter] : remote_counters) {
        out.family(name, "counter", help);
        out.count(name, "", counter->get());
    }
    const std::tuple<const char*, const char*, const Gauge*> remote_gauges[] = {
        {"remote_readahead_window_bytes", "How far ahead of the last sequential reader blocks are fetched.",
         &remote.window_bytes},
        {"remote_connections_in_use", "Range requests of a remote source in flight.", &remote.connections_in_use},
        {"remote_in_flight_bytes", "Bytes of the range requests in flight.", &remote.bytes_in_flight},
        {"remote_memory_blocks_bytes", "Fetched blocks kept in memory for readers.", &remote.bytes_in_memory},
        {"remote_queued_for_disk_bytes", "Fetched blocks waiting for the disk cache only (not kept for readers).",
         &remote.bytes_queued_for_disk},
        {"remote_memory_budget_bytes", "What blocks in flight, in memory and queued for the disk may hold.",
         &remote.memory_budget},
        {"remote_max_connections", "The most range requests in flight at once (max_connections=).",
         &remote.max_connections},
        {"remote_readahead_limit_bytes", "The read-ahead window's upper bound (readahead=).",
         &remote.readahead_limit},
        {"remote_connection_bytes_per_second", "One connection's rate while a range arrives (recent average).",
         &remote.connection_rate},
        {"remote_link_bytes_per_second", "All fetches' rate together while any is in flight (recent average).",
         &remote.link_rate}};
    for (const auto& [name, help, gauge] : remote_gauges) {
        out.family(name, "gauge", help);
        out.count(name, "", static_cast<std::uint64_t>(std::max<std::int64_t>(0, gauge->get())));
    }
    out.family("remote_first_byte_seconds", "gauge", "Time to the first byte of a range answer (recent average).");
    out.seconds("remote_first_byte_seconds", "",
                static_cast<std::uint64_t>(std::max<std::int64_t>(0, remote.first_byte_us.get())) * 1000);
    out.family("remote_round_trip_seconds", "gauge", "Time to the last byte of a range answer (recent average).");
    out.seconds("remote_round_trip_seconds", "",
                static_cast<std::uint64_t>(std::max<std::int64_t>(0, remote.round_trip_us.get())) * 1000);

    out.family("fuse_requests_total", "counter", "Requests the kernel sent to this mount, by kind.");
    for (std::size_t i = 0; i < kFuseRequestNames.size(); ++i) {
        out.count("fuse_requests_total", label("request", kFuseRequestNames[i]), stats.requests.get(i));
    }
    return out.take();
}

}  // namespace

std::size_t Stats::metrics_size() const { return render(*this, true).size() + kPaddingLine; }

std::string Stats::render_prometheus() const {
    std::string text = render(*this, false);
    const std::size_t size = metrics_size();
    // A last comment line fills the rest: parsers ignore comments that are not HELP or TYPE.
    text += '#';
    text.append(size - text.size() - 1, ' ');
    text += '\n';
    return text;
}

}  // namespace tensorfs
