// `tensorfs stats MOUNTPOINT [--json | --prometheus]`: the live counters of a mount (its .tensorfs/stats.json),
// readable; or its .tensorfs/metrics, for node_exporter's textfile collector.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <variant>

#include <nlohmann/json.hpp>

#include "arguments.hpp"
#include "commands.hpp"
#include "mount_table.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

using Json = nlohmann::ordered_json;

// Counters of bytes read as sizes, seconds with a unit, names without quotes, the rest as they are.
std::string counter_text(const std::string& key, const Json& value) {
    if (value.is_string()) return visible(value.get<std::string>());
    if (value.is_number_unsigned() && (key.find("bytes") != std::string::npos || key == "budget")) {
        const auto bytes = value.get<std::uint64_t>();
        return bytes < 1024 ? human_size(bytes) : human_size(bytes) + " (" + std::to_string(bytes) + ")";
    }
    if (value.is_number_float() && key == "seconds") {
        char text[32];
        std::snprintf(text, sizeof text, "%.3f s", value.get<double>());
        return text;
    }
    return visible(value.dump());
}

bool is_group_of_counters(const Json& value) {
    if (!value.is_object()) return false;
    for (const auto& item : value) {
        if (item.is_structured()) return false;
    }
    return true;
}

// A group of counters on one line: "hits 10, misses 3, hit rate 76.9%". The counters of a group named for bytes
// (bytes_by_dtype) are all sizes.
std::string group_text(const std::string& name, const Json& group) {
    const bool of_bytes = name.find("bytes") != std::string::npos;
    std::string text;
    for (const auto& [key, value] : group.items()) {
        text += (text.empty() ? "" : ", ") + key + " " + counter_text(of_bytes ? "bytes" : key, value);
    }
    if (group.contains("hits") && group.contains("misses") && group["hits"].is_number_unsigned() &&
        group["misses"].is_number_unsigned()) {
        const auto hits = group["hits"].get<std::uint64_t>();
        const auto lookups = hits + group["misses"].get<std::uint64_t>();
        if (lookups > 0) {
            char rate[48];
            std::snprintf(rate, sizeof rate, ", hit rate %.1f%%",
                          100.0 * static_cast<double>(hits) / static_cast<double>(lookups));
            text += rate;
        }
    }
    return text;
}

// Nested objects become indented rows; a group of plain counters stays on its row.
void add_rows(Table& table, const Json& object, const std::string& indent) {
    for (const auto& [key, value] : object.items()) {
        if (!value.is_object()) {
            table.add_row({indent + key, counter_text(key, value)});
        } else if (is_group_of_counters(value)) {
            table.add_row({indent + key, group_text(key, value)});
        } else {
            table.add_row({indent + key, ""});
            add_rows(table, value, indent + "  ");
        }
    }
}

// The text of the mount's .tensorfs/`name`, or the exit status of the failure it printed.
std::variant<std::string, int> read_counters(const std::string& mountpoint, const std::string& name) {
    const std::string path = mountpoint + "/.tensorfs/" + name;
    std::ifstream file(path, std::ios::binary);
    if (!file && errno == ENOENT) return failure(mountpoint + " is not a tensorfs mount (no .tensorfs/" + name + ")");
    if (!file && (errno == ENOTCONN || errno == ECONNABORTED)) return failure(dead_mount_line(mountpoint));
    if (!file) return failure(path + ": " + std::strerror(errno));
    std::ostringstream text;
    text << file.rdbuf();
    if (file.bad()) return failure(path + ": " + std::strerror(errno));
    return text.str();
}

// The metrics without the comment line that pads the file to its fixed size.
std::string without_padding(std::string text) {
    const std::size_t last_line = text.rfind('\n', text.size() >= 2 ? text.size() - 2 : 0);
    const std::size_t start = last_line == std::string::npos ? 0 : last_line + 1;
    if (start < text.size() && text[start] == '#' &&
        text.find_first_not_of(' ', start + 1) == text.size() - 1 && text.back() == '\n') {
        text.resize(start);
    }
    return text;
}

}  // namespace

int stats_command(const Arguments& args) {
    const SplitArguments split = split_arguments(args, {"--json", "--prometheus"});
    if (!split.error.empty()) return usage_error(split.error);
    if (const std::string problem = positional_problem("stats", split.positional, {"MOUNTPOINT"}); !problem.empty()) {
        return usage_error(problem);
    }
    if (split.has("--json") && split.has("--prometheus")) {
        return usage_error("stats takes --json or --prometheus, not both");
    }
    const std::string& mountpoint = split.positional[0];
    // Found in the mount table, not by opening files under the path (a model file would show an internal path).
    const auto mounted = mount_at(mountpoint);
    if (!mounted) return failure(mountpoint + ": not a mount (tensorfs status lists the tensorfs mounts)");
    if (mounted->type != "fuse.tensorfs") return failure(mountpoint + ": not a tensorfs mount (" + mounted->type + ")");
    if (split.has("--prometheus")) {
        auto metrics = read_counters(mountpoint, "metrics");
        if (const int* status = std::get_if<int>(&metrics)) return *status;
        std::fputs(without_padding(std::move(std::get<std::string>(metrics))).c_str(), stdout);
        return 0;
    }
    auto text = read_counters(mountpoint, "stats.json");
    if (const int* status = std::get_if<int>(&text)) return *status;
    const Json stats = Json::parse(std::get<std::string>(text), nullptr, false);
    if (stats.is_discarded() || !stats.is_object()) {
        return failure(mountpoint + "/.tensorfs/stats.json: not the JSON of a tensorfs mount");
    }

    if (split.has("--json")) {
        std::fputs((stats.dump(2) + "\n").c_str(), stdout);
        return 0;
    }
    Table table({Align::Left, Align::Left});
    add_rows(table, stats, "");
    std::fputs(table.render().c_str(), stdout);
    return 0;
}

}  // namespace tensorfs::cli
