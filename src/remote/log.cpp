#include "log.hpp"

#include <syslog.h>

#include <cstdio>

namespace tensorfs::remote {

void log_warning(const std::string& line) {
    std::fprintf(stderr, "tensorfs: %s\n", line.c_str());
    ::syslog(LOG_WARNING, "tensorfs: %s", line.c_str());
}

}  // namespace tensorfs::remote
