// timeout='s value (source_options.hpp).
#include <charconv>
#include <cmath>

#include "tensorfs/source_options.hpp"

namespace tensorfs {

std::optional<std::chrono::milliseconds> parse_timeout(std::string_view seconds) {
    double value = 0;
    const auto [end, error] = std::from_chars(seconds.data(), seconds.data() + seconds.size(), value);
    if (error != std::errc() || end != seconds.data() + seconds.size() || !std::isfinite(value) || value <= 0) {
        return std::nullopt;
    }
    const double milliseconds = std::ceil(value * 1000);
    if (milliseconds > static_cast<double>(kLongestTimeout.count())) return std::nullopt;
    return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(milliseconds));
}

}  // namespace tensorfs
