#include "tensorfs/read_began.hpp"

namespace tensorfs {
namespace {

thread_local std::optional<std::chrono::steady_clock::time_point> began_on_this_thread;

}  // namespace

ReadBegan::ReadBegan(std::chrono::steady_clock::time_point arrived) : outer_(began_on_this_thread) {
    began_on_this_thread = arrived;
}

ReadBegan::~ReadBegan() { began_on_this_thread = outer_; }

std::chrono::steady_clock::time_point read_began() {
    return began_on_this_thread.value_or(std::chrono::steady_clock::now());
}

}  // namespace tensorfs
