// One line on the terminal that shows how far a long write has come: bytes, share, rate and time left. Silent
// when stderr is not a terminal (a log or a pipe wants no carriage returns).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tensorfs::cli {

class ProgressLine {
public:
    // `what`: the first words of the line, such as "writing out.safetensors". `wanted`: false for a command's
    // --quiet.
    ProgressLine(std::string what, std::uint64_t total, bool wanted = true);

    // New first words, from the next redraw on (such as "comparing 12/291 tensors").
    void rename(std::string what) { what_ = std::move(what); }

    // Redraws the line (at most a few times a second) for `done` bytes of the total.
    void update(std::uint64_t done);
    // Draws the final figures and ends the line.
    void finish(std::uint64_t done);
    // Ends the line as it stands, so that an error message starts on a line of its own.
    void abandon();

private:
    void draw(std::uint64_t done, bool final);

    using Clock = std::chrono::steady_clock;
    const bool shown_;
    std::string what_;
    const std::uint64_t total_;
    const Clock::time_point started_;
    Clock::time_point last_drawn_;
    bool drawn_ = false;
};

}  // namespace tensorfs::cli
