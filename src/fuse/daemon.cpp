#include "daemon.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <string>

namespace tensorfs {

bool wait_and_raise_read_ahead(const std::string& mountpoint, unsigned read_ahead_kb) {
    struct stat root {};
    int status = 0;
    do {
        status = ::stat(mountpoint.c_str(), &root);   // waits for the daemon's first answer
    } while (status != 0 && errno == EINTR);
    if (status != 0) return false;
    char path[96];
    std::snprintf(path, sizeof path, "/sys/class/bdi/%u:%u/read_ahead_kb", major(root.st_dev), minor(root.st_dev));
    const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return true;
    const std::string value = std::to_string(read_ahead_kb);
    const ssize_t written = ::write(fd, value.data(), value.size());
    static_cast<void>(written);  // without the right to raise it the mount works, with smaller requests
    ::close(fd);
    return true;
}

void daemonize_when_mounted(const std::string& mountpoint, unsigned read_ahead_kb,
                            const std::function<void()>& unmount) {
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child < 0) {
        std::perror("tensorfs: fork");
        std::_Exit(2);
    }
    if (child > 0) {
        // Exit like libfuse's own daemonize does, without running this process's destructors: the daemon owns
        // the mount now (or died, and then leaves no dead mount behind).
        if (wait_and_raise_read_ahead(mountpoint, read_ahead_kb)) std::_Exit(0);
        std::fprintf(stderr, "tensorfs: the daemon serving %s ended before answering (%s)\n", mountpoint.c_str(),
                     std::strerror(errno));
        unmount();
        std::_Exit(2);
    }
    ::setsid();
    if (::chdir("/") != 0) std::perror("tensorfs: chdir /");
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        ::dup2(null, STDIN_FILENO);
        ::dup2(null, STDOUT_FILENO);
        ::dup2(null, STDERR_FILENO);
        if (null > STDERR_FILENO) ::close(null);
    }
}

}  // namespace tensorfs
