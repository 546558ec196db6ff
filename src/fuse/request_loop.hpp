// The loop that takes the kernel's requests from /dev/fuse and answers them: libfuse's single-threaded loop, but
// one that, after answering a request of a walk, polls the device for a short while before it sleeps.
//
// Why: a walk (`find`, `du`, `ls -lR`) is a stream of small requests, each sent only once the one before was
// answered. Sleeping between them costs a wake-up per request; on a virtual machine whose idle CPUs halt (each
// wake-up then goes through the hypervisor, as on this project's machines) that is most of a round trip: 43-51 us
// against 15-17 us with polling, and a first `find` over 100,000 tensor folders took 12.2-12.4 s against 6.3 s
// (docs/benchmarks.md). Polling for 100 us after each such request catches the next one of a stream without that
// wake-up, and costs nothing when no stream is running. sched_yield() between polls lets a reader or a read worker
// that shares this CPU go first.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>

namespace tensorfs {

// Called by an operation that answered a read on the loop's thread (a page-cache hit: see fuse_ops.cpp): its
// reader may be one that sends each read once the one before was answered (4 KiB random reads), so the loop polls
// for the next request as it does after a walk's requests. Without it, such reads ran at a third of the speed.
void poll_after_this_request();

// Runs until the session ends (unmount, or a signal that ends it); what fuse_session_loop returns.
int run_request_loop(fuse_session* session);

}  // namespace tensorfs
