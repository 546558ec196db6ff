// When the read served on this thread began. The FUSE adapter marks each read request's arrival while a worker
// serves it, so that a remote source's timeout= bounds the reader's whole wait, its time queued for a worker
// included. Reads made anywhere else (commands, the read-ahead, decoding ahead of a reader) begin when they ask.
#pragma once

#include <chrono>
#include <optional>

namespace tensorfs {

// Marks, for its lifetime, that the read served on this thread began at `arrived`.
class ReadBegan {
public:
    explicit ReadBegan(std::chrono::steady_clock::time_point arrived);
    ~ReadBegan();
    ReadBegan(const ReadBegan&) = delete;
    ReadBegan& operator=(const ReadBegan&) = delete;

private:
    std::optional<std::chrono::steady_clock::time_point> outer_;
};

// When the read on this thread began: as marked, else now.
std::chrono::steady_clock::time_point read_began();

}  // namespace tensorfs
