#include "tensorfs/errors.hpp"

namespace tensorfs {

std::string single_line(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string one_line;
    one_line.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7F) {
            one_line += "\\x";
            one_line += kHex[byte >> 4];
            one_line += kHex[byte & 0xF];
        } else {
            one_line += c;
        }
    }
    return one_line;
}

std::string Problem::line() const {
    std::string text = "tensorfs: " + file + ": " + what;
    if (at_byte) text += " (at byte " + std::to_string(*at_byte) + ")";
    // Paths and names in a message may come from the source itself (an index's shard names).
    return single_line(text);
}

namespace {
std::string first_line(const std::vector<Problem>& problems) {
    return problems.empty() ? std::string("invalid source") : problems.front().line();
}
}  // namespace

InvalidSource::InvalidSource(std::vector<Problem> problems)
    : std::runtime_error(first_line(problems)), problems_(std::move(problems)) {}

void Problems::add(std::string file, std::string what, std::optional<std::uint64_t> at_byte) {
    list_.push_back(Problem{std::move(file), std::move(what), at_byte});
}

void Problems::add_missing(std::string file, std::string what) {
    list_.push_back(Problem{std::move(file), std::move(what), std::nullopt, true});
}

void throw_problem(std::string file, std::string what, std::optional<std::uint64_t> at_byte) {
    throw InvalidSource({Problem{std::move(file), std::move(what), at_byte}});
}

void throw_missing(std::string file, std::string what) {
    throw InvalidSource({Problem{std::move(file), std::move(what), std::nullopt, true}});
}

void Problems::add_all(Problems&& other) {
    for (auto& problem : other.list_) list_.push_back(std::move(problem));
    other.list_.clear();
}

void Problems::throw_if_any() {
    if (!list_.empty()) throw InvalidSource(std::move(list_));
}

}  // namespace tensorfs
