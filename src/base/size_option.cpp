#include "tensorfs/size_option.hpp"

#include <charconv>

namespace tensorfs {

std::optional<std::uint64_t> parse_size(std::string_view text) {
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end == text.data()) return std::nullopt;
    std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
    if (suffix == "B") suffix = "";
    unsigned shift = 0;
    if (suffix == "K" || suffix == "k" || suffix == "KiB") shift = 10;
    else if (suffix == "M" || suffix == "MiB") shift = 20;
    else if (suffix == "G" || suffix == "GiB") shift = 30;
    else if (suffix == "T" || suffix == "TiB") shift = 40;
    else if (!suffix.empty()) return std::nullopt;
    if (shift > 0 && number > (UINT64_MAX >> shift)) return std::nullopt;
    return number << shift;
}

}  // namespace tensorfs
