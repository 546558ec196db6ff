// The module's long waits (opening a source, fetching, decoding, a whole model), which Ctrl-C ends at once: the work
// runs on a thread of its own while the calling thread, the GIL released, waits for it, taking the GIL back every
// 50 ms to let Python run its signal handlers. When one raises (KeyboardInterrupt), the call raises it there and
// then; the work is told to stop (loops check `stop` between pieces) and ends in the background, the fetches it
// started filling the disk cache. So work may outlive its caller: it must own what it touches (shared_ptrs it
// captured, memory of array_memory.hpp), never Python objects.
#pragma once

#include <atomic>
#include <functional>

namespace tensorfs::python {

using Work = std::function<void(const std::atomic<bool>& stop)>;

// Runs `work` as above, and rethrows what it threw; raises what a signal handler raised while it ran. Call with the
// GIL held. Work known to be short (`brief`: a local tensor of a few MiB) runs on the calling thread with the GIL
// released instead: a thread would cost more than the work.
void run_interruptibly(Work work, bool brief = false);

// Tells the work that Ctrl-C left running to stop, and waits for it to end, with the GIL released: run at the
// interpreter's exit (atexit), before what the work uses is torn down. A fetch under way ends within timeout= at
// most.
void finish_interrupted_work();

}  // namespace tensorfs::python
