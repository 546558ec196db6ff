// Errors that cross part boundaries. Every message is meant for a user, one line each.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tensorfs {

// The text with every control byte (a line break above all) written as \xNN, so that a message that names a file or
// a tensor (names come from the source itself) stays one line.
std::string single_line(std::string_view text);

// One broken rule of a source's format, printed as `tensorfs: FILE: WHAT (at byte N)`.
struct Problem {
    std::string file;
    std::string what;
    std::optional<std::uint64_t> at_byte;
    bool missing = false;  // the file (or repository) does not exist: what Python raises FileNotFoundError for

    std::string line() const;
};

// A source that breaks rules of its format; carries every problem found.
class InvalidSource : public std::runtime_error {
public:
    explicit InvalidSource(std::vector<Problem> problems);
    const std::vector<Problem>& problems() const { return problems_; }
    // Whether the first problem is a file that does not exist (a SOURCE that names nothing, a missing shard).
    bool missing() const { return !problems_.empty() && problems_.front().missing; }

private:
    std::vector<Problem> problems_;
};

// Collects the problems of one parse, so that `validate` can print them all.
class Problems {
public:
    void add(std::string file, std::string what, std::optional<std::uint64_t> at_byte = std::nullopt);
    // A file (or repository) that does not exist; `what` says so in the words of where it was looked for.
    void add_missing(std::string file, std::string what);
    bool empty() const { return list_.empty(); }
    // Moves the problems of `other` after these (to report problems found in parallel in a fixed order).
    void add_all(Problems&& other);
    // Throws InvalidSource when anything was added.
    void throw_if_any();

private:
    std::vector<Problem> list_;
};

// Throws InvalidSource holding the one problem `what` of `file`: a reader's or an opener's first fatal problem.
[[noreturn]] void throw_problem(std::string file, std::string what,
                                std::optional<std::uint64_t> at_byte = std::nullopt);
// The same for a file (or repository) that does not exist.
[[noreturn]] void throw_missing(std::string file, std::string what);

// A read of a source file that could not be served (short read, I/O or network error): EIO at the FUSE border.
class IoError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
    // A failed read of `file`: what() is "FILE: REASON", reason() is REASON alone (for messages that name the
    // file themselves, such as a parser's problems).
    IoError(const std::string& file, const std::string& reason)
        : std::runtime_error(file + ": " + reason), reason_(reason) {}

    const char* reason() const noexcept { return reason_.empty() ? what() : reason_.c_str(); }

private:
    std::string reason_;
};

}  // namespace tensorfs
