#include "daemon_process.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace tensorfs::csi {

std::optional<DaemonProcess> daemon_process(pid_t pid) {
    if (pid <= 0) return std::nullopt;
    std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(file, line)) return std::nullopt;
    // "PID (COMMAND) STATE ..." where COMMAND may hold spaces and parentheses: count fields after the last ')'.
    const std::size_t name_end = line.rfind(')');
    if (name_end == std::string::npos) return std::nullopt;
    std::istringstream fields(line.substr(name_end + 1));
    std::string field;
    // Field 3: the state; a process that ended (a zombie, until its parent reaps it) is not running.
    if (!(fields >> field) || field == "Z" || field == "X") return std::nullopt;
    // Fields 4 to 21, then 22: starttime.
    for (int number = 4; number <= 21; ++number) {
        if (!(fields >> field)) return std::nullopt;
    }
    DaemonProcess daemon{pid, 0};
    if (!(fields >> daemon.start)) return std::nullopt;
    return daemon;
}

bool is_running(const DaemonProcess& daemon) {
    const auto now = daemon_process(daemon.pid);
    return now && now->start == daemon.start;
}

}  // namespace tensorfs::csi
