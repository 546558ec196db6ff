// How long a read of a remote object waits for the network: until its deadline, timeout= after it began
// (read_began.hpp), whether it fetches itself or waits for a fetch under way; past it, it fails with IoError. While
// the server is silent, not at all.
#pragma once

#include <chrono>
#include <string>

#include "remote_context.hpp"

namespace tensorfs::remote {

using Deadline = std::chrono::steady_clock::time_point;

// When a read that begins now (or began as read_began() says) stops waiting for the network.
Deadline read_deadline(const RemoteContext& context);
// When a fetch that starts now and that no read waits on yet (the read-ahead's, prefetch's) stops waiting.
Deadline fetch_deadline(const RemoteContext& context);

// Throws IoError naming `name` while the server is silent (RemoteContext::no_answer): a read fails at once instead of
// waiting a timeout of its own for it.
void fail_if_silent(const RemoteContext& context, const std::string& name);

}  // namespace tensorfs::remote
