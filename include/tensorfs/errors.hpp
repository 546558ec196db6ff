// Errors that cross part boundaries. Every message is meant for a user, one line each.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tensorfs {

// The length of the UTF-8 sequence that starts `text` (2 to 4; 0 when it starts none, an ASCII byte included): a
// lead byte and its continuation bytes, no overlong forms, no surrogates, nothing past U+10FFFF.
std::size_t utf8_sequence(std::string_view text);

// The text with every control byte (a line break above all) and every byte that is not part of valid UTF-8 written
// as \xNN, so that a message that names a file or a tensor (names come from the source itself) stays one printable
// line, and one that Python can hold as str.
std::string single_line(std::string_view text);

// Why a source could not be opened or read, for front ends that answer in their own terms: an errno (FUSE, Python's
// OSError), an exception class (Python), a gRPC code (CSI). Messages say the rest; no front end reads their words.
enum class ErrorKind : std::uint8_t {
    InvalidSource,  // breaks a rule of its format, or is not a model tensorfs can find
    NotFound,       // a file, repository, revision, bucket or key that does not exist
    Permission,     // refused: a file not readable, credentials missing, wrong or not allowed
    Unavailable,    // the server cannot be reached, or kept failing (HTTP 5xx, 429) until the deadline
    TimedOut,       // no answer within timeout=
    Unsupported,    // valid, but a variant tensorfs does not read (a big-endian file, a server without ranges)
    Io,             // a read that failed once the source was open (a short read, a changed object, an I/O error)
};

// The kind's name in machine-readable output (the mount's structured error line): "invalid_source", "not_found"...
std::string_view kind_name(ErrorKind kind);
// The kind named so; nullopt for a name that is none.
std::optional<ErrorKind> kind_named(std::string_view name);
// The errno that says it: EINVAL, ENOENT, EACCES, EHOSTUNREACH, ETIMEDOUT, EOPNOTSUPP, EIO.
int errno_of(ErrorKind kind);
// The kind of a failed system call's errno: ENOENT NotFound, EACCES Permission... (EIO and the rest: Io).
ErrorKind kind_of_errno(int error);

// One broken rule of a source's format (or another reason it cannot be opened), printed as
// `tensorfs: FILE: WHAT (at byte N)`.
struct Problem {
    std::string file;
    std::string what;
    std::optional<std::uint64_t> at_byte;
    ErrorKind kind = ErrorKind::InvalidSource;

    std::string line() const;
};

// A source that cannot be opened: one that breaks rules of its format, or is missing, refused, unreachable...
// Carries every problem found; its kind and file are the first one's.
class SourceError : public std::runtime_error {
public:
    explicit SourceError(std::vector<Problem> problems);
    const std::vector<Problem>& problems() const { return problems_; }
    ErrorKind kind() const { return problems_.empty() ? ErrorKind::InvalidSource : problems_.front().kind; }
    // The first problem's line without "tensorfs: ", and how many more there are: what a front end that shows one
    // line says (Python's message, CSI's status).
    std::string summary() const;

private:
    std::vector<Problem> problems_;
};

// Collects the problems of one parse, so that `validate` can print them all.
class Problems {
public:
    void add(std::string file, std::string what, std::optional<std::uint64_t> at_byte = std::nullopt);
    // A file (or repository) that does not exist; `what` says so in the words of where it was looked for.
    void add_missing(std::string file, std::string what);
    // A valid file in a variant tensorfs does not read (a big-endian one).
    void add_unsupported(std::string file, std::string what, std::optional<std::uint64_t> at_byte);
    // The problems of a SourceError caught while reading one part of a source, kinds kept.
    void add_all(const SourceError& refused);
    bool empty() const { return list_.empty(); }
    // Moves the problems of `other` after these (to report problems found in parallel in a fixed order).
    void add_all(Problems&& other);
    // Throws SourceError when anything was added.
    void throw_if_any();

private:
    std::vector<Problem> list_;
};

// Throws SourceError holding the one problem `what` of `file`: a reader's or an opener's first fatal problem.
[[noreturn]] void throw_problem(std::string file, std::string what,
                                std::optional<std::uint64_t> at_byte = std::nullopt);
// The same for a file (or repository) that does not exist.
[[noreturn]] void throw_missing(std::string file, std::string what);
// The same, of another kind.
[[noreturn]] void throw_source_error(ErrorKind kind, std::string file, std::string what);

// A read of a source file that could not be served (short read, I/O or network error): EIO at the FUSE border.
class IoError : public std::runtime_error {
public:
    explicit IoError(const std::string& what, ErrorKind kind = ErrorKind::Io)
        : std::runtime_error(what), kind_(kind) {}
    // A failed read of `file`: what() is "FILE: REASON", reason() is REASON alone (for messages that name the
    // file themselves, such as a parser's problems).
    IoError(const std::string& file, const std::string& reason, ErrorKind kind = ErrorKind::Io)
        : std::runtime_error(file + ": " + reason), file_(file), reason_(reason), kind_(kind) {}

    const char* reason() const noexcept { return reason_.empty() ? what() : reason_.c_str(); }
    // The file it concerns; empty when what() names it itself.
    const std::string& file() const noexcept { return file_; }
    ErrorKind kind() const noexcept { return kind_; }

private:
    std::string file_;
    std::string reason_;
    ErrorKind kind_;
};

}  // namespace tensorfs
