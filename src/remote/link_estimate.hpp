// What the link to a source carries, measured on the range answers of its fetches, and the read-ahead window that
// keeps it busy: about rate × round trip bytes in flight.
//
// - The round trip of a range: from sending the request to its last byte (recent average). A reader that wants
//   the link's full rate needs the next ranges asked for that long before it reaches them.
// - The link's rate: bytes delivered per second while at least one fetch was in flight (not per second of the
//   clock: a reader that pauses does not make the link look slow). While the window is what limits the fetches,
//   this is window / round trip, so a ceiling of twice rate × round trip lets the window double with each sample,
//   as TCP's slow start does, until the link (or a connection cap, or the reader) stops the rate from growing.
//
// Not thread-safe: RemoteContext calls it with its mutex held. Times are in microseconds of a steady clock,
// given by the caller (so that tests can drive it).
#pragma once

#include <cstdint>

namespace tensorfs::remote {

class LinkEstimate {
public:
    // One range answer of `bytes`: `first_byte_us` to its first byte, `total_us` to its last.
    void answered(std::uint64_t bytes, std::uint64_t first_byte_us, std::uint64_t total_us);
    // A fetch began, or ended (fetched or not), at `now_us`; `bytes` of it were delivered when it ended.
    void fetch_started(std::uint64_t now_us);
    void fetch_ended(std::uint64_t now_us, std::uint64_t bytes);

    // Recent averages; 0 before the first answer (or the first sample of the rate).
    double first_byte_us() const { return first_byte_us_; }
    double connection_rate() const { return connection_rate_; }
    double round_trip_us() const { return round_trip_us_; }
    double link_rate() const { return link_rate_; }

    // How far ahead of a sequential reader blocks should be fetched: twice rate × round trip, at least `floor`
    // and at most `limit`; `limit` until both are measured.
    std::uint64_t window_ceiling(std::uint64_t floor, std::uint64_t limit) const;

private:
    void add_busy_time(std::uint64_t now_us);
    void close_sample();

    double first_byte_us_ = 0;
    double connection_rate_ = 0;
    double round_trip_us_ = 0;
    double link_rate_ = 0;
    unsigned fetches_ = 0;              // in flight now
    std::uint64_t busy_since_us_ = 0;   // from when busy time is still to be counted (while fetches_ > 0)
    std::uint64_t last_end_us_ = 0;     // when the last fetch ended
    std::uint64_t sample_busy_us_ = 0;  // busy time, and bytes delivered in it, since the last sample
    std::uint64_t sample_bytes_ = 0;
};

}  // namespace tensorfs::remote
