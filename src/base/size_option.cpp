#include "tensorfs/size_option.hpp"

#include <cctype>
#include <charconv>
#include <string>

namespace tensorfs {

std::optional<std::uint64_t> parse_size(std::string_view text) {
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end == text.data()) return std::nullopt;
    // The unit in any case, with or without "iB" or "B": 512M, 512m, 512MiB, 512mb are all 512 << 20.
    std::string unit(end, text.data() + text.size());
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (unit.ends_with("ib") && unit.size() == 3) {
        unit.resize(1);
    } else if (unit.ends_with("b")) {
        unit.pop_back();
    }
    unsigned shift = 0;
    if (unit == "k") shift = 10;
    else if (unit == "m") shift = 20;
    else if (unit == "g") shift = 30;
    else if (unit == "t") shift = 40;
    else if (!unit.empty()) return std::nullopt;
    if (shift > 0 && number > (UINT64_MAX >> shift)) return std::nullopt;
    return number << shift;
}

std::string budget_problem(std::string_view name, std::string_view text, std::uint64_t bytes, std::uint64_t least,
                           std::string_view what) {
    if (bytes >= least) return {};
    return std::string(name) + "=" + std::string(text) + " is " + std::to_string(bytes) + " bytes, less than " +
           std::string(what) + "; sizes take a unit: 512M, 2G";
}

}  // namespace tensorfs
