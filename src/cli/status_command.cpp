// `tensorfs status [--json]`: every tensorfs mount of the machine (from /proc/self/mountinfo), with its daemon and
// the counters of its .tensorfs/stats.json. Each stats.json is read by a child process that is given up on after a
// bounded wait, so that a mount whose daemon hangs or died never holds the command up.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "arguments.hpp"
#include "commands.hpp"
#include "hidden_secrets.hpp"
#include "mount_table.hpp"
#include "tensorfs/remote_source.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

using Json = nlohmann::ordered_json;

// How long a mount may take to answer a read of its stats.json: a live daemon answers in microseconds, but a
// machine busy enough can delay it for seconds. A dead daemon's mount answers at once (ENOTCONN).
constexpr auto kAnswerTimeout = std::chrono::seconds(10);
// stats.json is 4096 bytes; more is not what a tensorfs mount gives.
constexpr std::size_t kMostStatsBytes = 1 << 16;

enum class State { Serving, DaemonGone, NotAnswering, Unreadable };

struct MountStatus {
    MountEntry mount;
    State state = State::Unreadable;
    std::string problem;  // for Unreadable
    Json stats;           // for Serving
};

// A child reading `path` into a pipe: its pid and the pipe's reading end.
struct Reader {
    pid_t pid = -1;
    int fd = -1;
    std::string text;
    bool done = false;
};

Reader start_reader(const std::string& path) {
    Reader reader;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return reader;
    reader.pid = ::fork();
    if (reader.pid == 0) {
        // The child: the file's bytes to the pipe, the error number as the exit status.
        const int file = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (file < 0) ::_exit(errno);
        char buffer[4096];
        std::size_t total = 0;
        for (ssize_t got; (got = ::read(file, buffer, sizeof buffer)) != 0 && total < kMostStatsBytes;) {
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) ::_exit(errno);
            total += static_cast<std::size_t>(got);
            for (ssize_t written = 0; written < got;) {
                const ssize_t sent = ::write(fds[1], buffer + written, static_cast<std::size_t>(got - written));
                if (sent <= 0) ::_exit(EPIPE);
                written += sent;
            }
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    if (reader.pid < 0) {
        ::close(fds[0]);
        return reader;
    }
    reader.fd = fds[0];
    return reader;
}

// Reads every reader's pipe until it ends or the time is up.
void collect(std::vector<Reader>& readers) {
    const auto deadline = std::chrono::steady_clock::now() + kAnswerTimeout;
    for (;;) {
        std::vector<pollfd> waiting;
        std::vector<Reader*> owners;
        for (Reader& reader : readers) {
            if (reader.fd >= 0 && !reader.done) {
                waiting.push_back({reader.fd, POLLIN, 0});
                owners.push_back(&reader);
            }
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                                std::chrono::steady_clock::now());
        if (waiting.empty() || left.count() <= 0) return;
        if (::poll(waiting.data(), waiting.size(), static_cast<int>(left.count())) < 0 && errno != EINTR) return;
        for (std::size_t i = 0; i < waiting.size(); ++i) {
            if (waiting[i].revents == 0) continue;
            char buffer[4096];
            const ssize_t got = ::read(waiting[i].fd, buffer, sizeof buffer);
            if (got > 0 && owners[i]->text.size() < kMostStatsBytes) {
                owners[i]->text.append(buffer, static_cast<std::size_t>(got));
            } else if (got == 0 || (got < 0 && errno != EINTR)) {
                owners[i]->done = true;
            }
        }
    }
}

// The reader's outcome; a reader still waiting on its mount is killed (a FUSE request's wait ends on SIGKILL).
void finish(Reader& reader, MountStatus& status) {
    if (reader.fd >= 0) ::close(reader.fd);
    if (reader.pid < 0) {
        status.problem = "cannot start a process to read it";
        return;
    }
    if (!reader.done) {
        ::kill(reader.pid, SIGKILL);
        status.state = State::NotAnswering;
    }
    int exit_status = 0;
    // Bounded: a child that does not end at once after SIGKILL is left to init.
    for (int attempt = 0; attempt < 100 && ::waitpid(reader.pid, &exit_status, WNOHANG) == 0; ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (status.state == State::NotAnswering) return;
    const int error = WIFEXITED(exit_status) ? WEXITSTATUS(exit_status) : EIO;
    if (error == ENOTCONN || error == ECONNABORTED) {
        status.state = State::DaemonGone;
    } else if (error != 0) {
        status.problem = std::strerror(error);
    } else {
        status.stats = Json::parse(reader.text, nullptr, false);
        if (status.stats.is_object()) {
            status.state = State::Serving;
        } else {
            status.problem = "its .tensorfs/stats.json is not the JSON of a tensorfs mount";
        }
    }
}

std::vector<MountStatus> statuses() {
    std::vector<MountStatus> found;
    std::vector<Reader> readers;
    for (auto& mount : tensorfs_mounts()) {
        readers.push_back(start_reader(mount.mountpoint + "/.tensorfs/stats.json"));
        found.push_back({std::move(mount), State::Unreadable, {}, {}});
    }
    collect(readers);
    for (std::size_t i = 0; i < found.size(); ++i) finish(readers[i], found[i]);
    return found;
}

std::optional<std::uint64_t> number_at(const Json& stats, const Json::json_pointer& where) {
    if (!stats.contains(where) || !stats[where].is_number_unsigned()) return std::nullopt;
    return stats[where].get<std::uint64_t>();
}

std::uint64_t bytes_served(const Json& stats) {
    std::uint64_t total = 0;
    if (stats.contains("reads") && stats["reads"].is_object()) {
        for (const auto& kind : stats["reads"]) {
            if (kind.contains("bytes") && kind["bytes"].is_number_unsigned()) {
                total += kind["bytes"].get<std::uint64_t>();
            }
        }
    }
    return total;
}

std::string state_name(State state) {
    switch (state) {
        case State::Serving: return "serving";
        case State::DaemonGone: return "daemon gone";
        case State::NotAnswering: return "not answering";
        case State::Unreadable: break;
    }
    return "unreadable";
}

// What a user runs to clear a mount that cannot serve any more.
std::string clearing_command(const MountStatus& status) {
    if (status.state == State::DaemonGone) return dead_mount_clearing(status.mount.mountpoint);
    if (status.state == State::NotAnswering) return "fusermount3 -uz " + status.mount.mountpoint;
    return {};
}

std::string uptime_text(std::int64_t seconds) {
    char text[32];
    if (seconds < 60) {
        std::snprintf(text, sizeof text, "%llds", static_cast<long long>(seconds));
    } else if (seconds < 3600) {
        std::snprintf(text, sizeof text, "%lldm%02llds", static_cast<long long>(seconds / 60),
                      static_cast<long long>(seconds % 60));
    } else if (seconds < 86400) {
        std::snprintf(text, sizeof text, "%lldh%02lldm", static_cast<long long>(seconds / 3600),
                      static_cast<long long>(seconds / 60 % 60));
    } else {
        std::snprintf(text, sizeof text, "%lldd%02lldh", static_cast<long long>(seconds / 86400),
                      static_cast<long long>(seconds / 3600 % 24));
    }
    return text;
}

struct Figures {
    std::optional<std::uint64_t> pid, served, fetched, disk_hits, errors;
    std::optional<std::int64_t> uptime;
};

Figures figures_of(const MountStatus& status) {
    Figures figures;
    if (status.state != State::Serving) return figures;
    const Json& stats = status.stats;
    figures.pid = number_at(stats, "/daemon/pid"_json_pointer);
    figures.served = bytes_served(stats);
    figures.errors = number_at(stats, "/read_errors"_json_pointer);
    if (is_remote_source(status.mount.source)) {
        figures.fetched = number_at(stats, "/remote/bytes_fetched"_json_pointer);
        figures.disk_hits = number_at(stats, "/remote/disk_cache_hits"_json_pointer);
    }
    if (const auto started = number_at(stats, "/daemon/started_unix_seconds"_json_pointer)) {
        figures.uptime = std::max<std::int64_t>(0, ::time(nullptr) - static_cast<std::int64_t>(*started));
    }
    return figures;
}

Json json_of(const MountStatus& status) {
    const Figures figures = figures_of(status);
    const auto or_null = [](const auto& value) { return value ? Json(*value) : Json(nullptr); };
    Json entry = {{"mountpoint", status.mount.mountpoint},
                  {"source", with_passwords_hidden(status.mount.source)},
                  {"state", state_name(status.state)},
                  {"pid", or_null(figures.pid)},
                  {"uptime_seconds", or_null(figures.uptime)},
                  {"bytes_served", or_null(figures.served)},
                  {"bytes_fetched", or_null(figures.fetched)},
                  {"disk_cache_hits", or_null(figures.disk_hits)},
                  {"read_errors", or_null(figures.errors)}};
    if (!status.problem.empty()) entry["problem"] = status.problem;
    const std::string clear = clearing_command(status);
    entry["clear_with"] = clear.empty() ? Json(nullptr) : Json(clear);
    return entry;
}

void print_table(const std::vector<MountStatus>& found) {
    Table table({Align::Left, Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Right,
                 Align::Right, Align::Right});
    table.add_row({"MOUNTPOINT", "SOURCE", "STATE", "PID", "UPTIME", "SERVED", "FETCHED", "DISK HITS", "ERRORS"});
    const auto text = [](const std::optional<std::uint64_t>& value, bool size) {
        return !value ? std::string("-") : size ? human_size(*value) : std::to_string(*value);
    };
    for (const MountStatus& status : found) {
        const Figures figures = figures_of(status);
        table.add_row({visible(status.mount.mountpoint), visible(with_passwords_hidden(status.mount.source)),
                       state_name(status.state), text(figures.pid, false),
                       figures.uptime ? uptime_text(*figures.uptime) : "-", text(figures.served, true),
                       text(figures.fetched, true), text(figures.disk_hits, false), text(figures.errors, false)});
    }
    std::fputs(table.render().c_str(), stdout);
    for (const MountStatus& status : found) {
        const std::string& where = status.mount.mountpoint;
        if (status.state == State::DaemonGone) {
            std::printf("%s\n", dead_mount_line(where).c_str());
        } else if (status.state == State::NotAnswering) {
            std::printf("%s: does not answer (its daemon may be stuck); detach it with: %s\n", where.c_str(),
                        clearing_command(status).c_str());
        } else if (status.state == State::Unreadable) {
            std::printf("%s: %s\n", where.c_str(), status.problem.c_str());
        }
    }
}

}  // namespace

int status_command(const Arguments& args) {
    const SplitArguments split = split_arguments(args, {"--json"});
    if (!split.error.empty()) return usage_error(split.error);
    if (const std::string problem = positional_problem("status", split.positional, {}); !problem.empty()) {
        return usage_error(problem);
    }
    const std::vector<MountStatus> found = statuses();
    if (split.has("--json")) {
        Json list = Json::array();
        for (const MountStatus& status : found) list.push_back(json_of(status));
        std::fputs((list.dump(2, ' ', false, Json::error_handler_t::replace) + "\n").c_str(), stdout);
        return 0;
    }
    if (found.empty()) {
        std::puts("no tensorfs mounts");
        return 0;
    }
    print_table(found);
    return 0;
}

}  // namespace tensorfs::cli
