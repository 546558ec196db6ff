#include "link_estimate.hpp"

#include <algorithm>

namespace tensorfs::remote {
namespace {

// Each new figure weighs an eighth of the recent average: steady against one slow answer, and caught up within a
// few dozen answers.
double average(double before, double now) { return before == 0 ? now : before + (now - before) / 8; }

// The link's rate is sampled over this much busy time: long enough to hold several range answers on a fast link.
constexpr std::uint64_t kSampleBusyUs = 50'000;

}  // namespace

void LinkEstimate::answered(std::uint64_t bytes, std::uint64_t first_byte_us, std::uint64_t total_us) {
    if (total_us <= first_byte_us) return;
    first_byte_us_ = average(first_byte_us_, static_cast<double>(first_byte_us));
    round_trip_us_ = average(round_trip_us_, static_cast<double>(total_us));
    connection_rate_ = average(connection_rate_, static_cast<double>(bytes) * 1e6 /
                                                     static_cast<double>(total_us - first_byte_us));
}

void LinkEstimate::fetch_started(std::uint64_t now_us) {
    if (fetches_++ == 0) busy_since_us_ = now_us;
}

void LinkEstimate::fetch_ended(std::uint64_t now_us, std::uint64_t bytes) {
    if (fetches_ == 0) return;
    // A sample runs from one fetch's end to another's: it holds the bytes of the fetches that ended in it, and
    // the busy time between. Fetches that end at the same moment all go into one sample.
    if (sample_busy_us_ >= kSampleBusyUs && now_us > last_end_us_) close_sample();
    add_busy_time(now_us);
    sample_bytes_ += bytes;
    last_end_us_ = now_us;
    --fetches_;
}

void LinkEstimate::close_sample() {
    // The rate goes up to a higher sample at once (the window follows within a sample), and down by an eighth of
    // the difference: one slow sample does not close the window.
    const double sample = static_cast<double>(sample_bytes_) * 1e6 / static_cast<double>(sample_busy_us_);
    link_rate_ = sample > link_rate_ ? sample : average(link_rate_, sample);
    sample_busy_us_ = 0;
    sample_bytes_ = 0;
}

void LinkEstimate::add_busy_time(std::uint64_t now_us) {
    if (now_us > busy_since_us_) sample_busy_us_ += now_us - busy_since_us_;
    busy_since_us_ = now_us;
}

std::uint64_t LinkEstimate::window_ceiling(std::uint64_t floor, std::uint64_t limit) const {
    if (link_rate_ == 0 || round_trip_us_ == 0) return limit;
    const double wanted = 2 * link_rate_ * round_trip_us_ / 1e6;
    const double bounded = std::clamp(wanted, static_cast<double>(std::min(floor, limit)), static_cast<double>(limit));
    return static_cast<std::uint64_t>(bounded);
}

}  // namespace tensorfs::remote
