#include "tensorfs/exit_signals.hpp"

#include <signal.h>

namespace tensorfs {

void start_threads_blocking_exit_signals(const std::function<void()>& start) {
    sigset_t exit_signals;
    sigemptyset(&exit_signals);
    sigaddset(&exit_signals, SIGINT);
    sigaddset(&exit_signals, SIGTERM);
    sigaddset(&exit_signals, SIGHUP);
    sigset_t previous;
    pthread_sigmask(SIG_BLOCK, &exit_signals, &previous);
    start();
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

}  // namespace tensorfs
