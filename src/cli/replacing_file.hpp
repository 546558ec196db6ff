// A file written under a temporary name in its target's folder and renamed over the target only when complete,
// so that the target is never seen half written, and no partial file stays behind after a failure.
#pragma once

#include <cstddef>
#include <string>

namespace tensorfs::cli {

class ReplacingFile {
public:
    // Creates the temporary file (mode 0666 less the umask, as a plain new file). Throws std::runtime_error
    // naming `target` when its folder cannot take it.
    explicit ReplacingFile(std::string target);
    // Removes the temporary file unless commit() succeeded.
    ~ReplacingFile();
    ReplacingFile(const ReplacingFile&) = delete;
    ReplacingFile& operator=(const ReplacingFile&) = delete;

    // Writes all of `data`; throws std::runtime_error on an error. Returns false, having written what it could,
    // when a signal interrupted it and `interrupted()` says to stop.
    bool write(const char* data, std::size_t length, bool (*interrupted)());
    // Closes the file and renames it to the target. Throws std::runtime_error on an error.
    void commit();
    // Removes the temporary file now (also safe to call twice).
    void discard();

    const std::string& temporary_path() const { return temporary_; }

private:
    [[noreturn]] void fail(const std::string& what);

    std::string target_;
    std::string temporary_;
    int fd_ = -1;
    bool committed_ = false;
};

}  // namespace tensorfs::cli
