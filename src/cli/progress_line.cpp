#include "progress_line.hpp"

#include <unistd.h>

#include <cstdio>

#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

constexpr auto kRedrawEvery = std::chrono::milliseconds(250);

// "0:42", "12:05", "3:07:55".
std::string duration_text(double seconds) {
    const auto whole = static_cast<std::uint64_t>(seconds + 0.5);
    char text[32];
    if (whole >= 3600) {
        std::snprintf(text, sizeof text, "%llu:%02llu:%02llu", static_cast<unsigned long long>(whole / 3600),
                      static_cast<unsigned long long>(whole / 60 % 60), static_cast<unsigned long long>(whole % 60));
    } else {
        std::snprintf(text, sizeof text, "%llu:%02llu", static_cast<unsigned long long>(whole / 60),
                      static_cast<unsigned long long>(whole % 60));
    }
    return text;
}

}  // namespace

ProgressLine::ProgressLine(std::string what, std::uint64_t total, bool wanted)
    : shown_(wanted && ::isatty(STDERR_FILENO) == 1), what_(std::move(what)), total_(total), started_(Clock::now()) {}

void ProgressLine::update(std::uint64_t done) {
    if (!shown_) return;
    const auto now = Clock::now();
    if (drawn_ && now - last_drawn_ < kRedrawEvery) return;
    last_drawn_ = now;
    draw(done, false);
}

void ProgressLine::finish(std::uint64_t done) {
    if (!shown_) return;
    draw(done, true);
    std::fputc('\n', stderr);
    drawn_ = false;
}

void ProgressLine::abandon() {
    if (shown_ && drawn_) std::fputc('\n', stderr);
    drawn_ = false;
}

void ProgressLine::draw(std::uint64_t done, bool final) {
    const double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
    std::string line = "\r" + what_ + ": " + human_size(done) + " of " + human_size(total_);
    if (total_ > 0) line += " (" + std::to_string(done * 100 / total_) + "%)";
    line += ", " + human_size(static_cast<std::uint64_t>(rate)) + "/s";
    if (final) {
        line += ", " + duration_text(seconds);
    } else if (rate > 0) {
        line += ", " + duration_text(static_cast<double>(total_ - done) / rate) + " left";
    }
    line += "\x1b[K";   // clears what a longer line before left
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace tensorfs::cli
