// Lines for the daemon's log: its standard error (seen with -f) and syslog (a background daemon's stderr is
// /dev/null).
#pragma once

#include <string>

namespace tensorfs::remote {

void log_warning(const std::string& line);

}  // namespace tensorfs::remote
