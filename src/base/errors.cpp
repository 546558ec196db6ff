#include "tensorfs/errors.hpp"

#include <array>
#include <cerrno>

namespace tensorfs {

std::size_t utf8_sequence(std::string_view text) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(0);
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) low = 0xA0;
        if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) low = 0x90;
        if (lead == 0xF4) high = 0x8F;
    } else {
        return 0;
    }
    if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
    for (std::size_t i = 2; i < length; ++i) {
        if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
    }
    return length;
}

namespace {

struct KindInfo {
    ErrorKind kind;
    std::string_view name;
    int error;
};

constexpr std::array<KindInfo, 7> kKinds = {{
    {ErrorKind::InvalidSource, "invalid_source", EINVAL},
    {ErrorKind::NotFound, "not_found", ENOENT},
    {ErrorKind::Permission, "permission", EACCES},
    {ErrorKind::Unavailable, "unavailable", EHOSTUNREACH},
    {ErrorKind::TimedOut, "timed_out", ETIMEDOUT},
    {ErrorKind::Unsupported, "unsupported", EOPNOTSUPP},
    {ErrorKind::Io, "io", EIO},
}};

const KindInfo& info_of(ErrorKind kind) {
    for (const KindInfo& info : kKinds) {
        if (info.kind == kind) return info;
    }
    return kKinds.back();
}

std::string first_line(const std::vector<Problem>& problems) {
    return problems.empty() ? std::string("invalid source") : problems.front().line();
}

}  // namespace

std::string single_line(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string one_line;
    one_line.reserve(text.size());
    while (!text.empty()) {
        const auto byte = static_cast<unsigned char>(text.front());
        std::size_t length = byte >= 0x20 && byte < 0x7F ? 1 : byte >= 0x80 ? utf8_sequence(text) : 0;
        if (length == 0) {
            one_line += "\\x";
            one_line += kHex[byte >> 4];
            one_line += kHex[byte & 0xF];
            length = 1;
        } else {
            one_line += text.substr(0, length);
        }
        text.remove_prefix(length);
    }
    return one_line;
}

std::string_view kind_name(ErrorKind kind) { return info_of(kind).name; }

std::optional<ErrorKind> kind_named(std::string_view name) {
    for (const KindInfo& info : kKinds) {
        if (info.name == name) return info.kind;
    }
    return std::nullopt;
}

int errno_of(ErrorKind kind) { return info_of(kind).error; }

ErrorKind kind_of_errno(int error) {
    switch (error) {
        case ENOENT:
        case ENOTDIR: return ErrorKind::NotFound;
        case EACCES:
        case EPERM: return ErrorKind::Permission;
        case ETIMEDOUT: return ErrorKind::TimedOut;
        default: return ErrorKind::Io;
    }
}

std::string Problem::line() const {
    std::string text = "tensorfs: " + file + ": " + what;
    if (at_byte) text += " (at byte " + std::to_string(*at_byte) + ")";
    // Paths and names in a message may come from the source itself (an index's shard names).
    return single_line(text);
}

SourceError::SourceError(std::vector<Problem> problems)
    : std::runtime_error(first_line(problems)), problems_(std::move(problems)) {}

std::string SourceError::summary() const {
    constexpr std::string_view kPrefix = "tensorfs: ";
    std::string text = what();
    if (text.starts_with(kPrefix)) text.erase(0, kPrefix.size());
    if (problems_.size() > 1) {
        const std::size_t more = problems_.size() - 1;
        text += " (and " + std::to_string(more) + " more problem" + (more == 1 ? "" : "s") +
                ": tensorfs validate lists them)";
    }
    return text;
}

void Problems::add(std::string file, std::string what, std::optional<std::uint64_t> at_byte) {
    list_.push_back(Problem{std::move(file), std::move(what), at_byte});
}

void Problems::add_missing(std::string file, std::string what) {
    list_.push_back(Problem{std::move(file), std::move(what), std::nullopt, ErrorKind::NotFound});
}

void Problems::add_unsupported(std::string file, std::string what, std::optional<std::uint64_t> at_byte) {
    list_.push_back(Problem{std::move(file), std::move(what), at_byte, ErrorKind::Unsupported});
}

void throw_problem(std::string file, std::string what, std::optional<std::uint64_t> at_byte) {
    throw SourceError({Problem{std::move(file), std::move(what), at_byte}});
}

void throw_missing(std::string file, std::string what) {
    throw_source_error(ErrorKind::NotFound, std::move(file), std::move(what));
}

void throw_source_error(ErrorKind kind, std::string file, std::string what) {
    throw SourceError({Problem{std::move(file), std::move(what), std::nullopt, kind}});
}

void Problems::add_all(Problems&& other) {
    for (auto& problem : other.list_) list_.push_back(std::move(problem));
    other.list_.clear();
}

void Problems::add_all(const SourceError& refused) {
    list_.insert(list_.end(), refused.problems().begin(), refused.problems().end());
}

void Problems::throw_if_any() {
    if (!list_.empty()) throw SourceError(std::move(list_));
}

}  // namespace tensorfs
