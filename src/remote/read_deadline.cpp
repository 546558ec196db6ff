#include "read_deadline.hpp"

#include <cstdio>

#include "tensorfs/errors.hpp"
#include "tensorfs/read_began.hpp"

namespace tensorfs::remote {

Deadline read_deadline(const RemoteContext& context) { return read_began() + context.timeout(); }

Deadline fetch_deadline(const RemoteContext& context) { return std::chrono::steady_clock::now() + context.timeout(); }

void fail_if_silent(const RemoteContext& context, const std::string& name) {
    if (const auto ago = context.silence()) {
        const auto seconds = std::chrono::duration_cast<std::chrono::milliseconds>(*ago).count() / 1000.0;
        char text[32];
        std::snprintf(text, sizeof text, "%.1f", seconds);
        throw IoError(name,
                      std::string("the server gave no answer ") + text +
                          " s ago; reads fail at once until it answers, or for " + timeout_text(context.timeout()) +
                          " after that",
                      ErrorKind::TimedOut);
    }
}

}  // namespace tensorfs::remote
