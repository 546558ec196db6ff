// `tensorfs stats MOUNTPOINT [--json]`: the live counters of a mount (its .tensorfs/stats.json), readable.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "arguments.hpp"
#include "commands.hpp"
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

// A group of counters on one line: "hits 10, misses 3, hit rate 76.9%".
std::string group_text(const Json& group) {
    std::string text;
    for (const auto& [key, value] : group.items()) {
        text += (text.empty() ? "" : ", ") + key + " " + counter_text(key, value);
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
            table.add_row({indent + key, group_text(value)});
        } else {
            table.add_row({indent + key, ""});
            add_rows(table, value, indent + "  ");
        }
    }
}

}  // namespace

int stats_command(const Arguments& args) {
    const SplitArguments split = split_arguments(args, {"--json"});
    if (!split.error.empty()) return usage_error(split.error);
    if (split.positional.size() != 1) return usage_error("stats needs MOUNTPOINT");
    const std::string path = split.positional[0] + "/.tensorfs/stats.json";
    std::ifstream file(path, std::ios::binary);
    if (!file && errno == ENOENT) {
        return failure(split.positional[0] + " is not a tensorfs mount (no .tensorfs/stats.json)");
    }
    if (!file) return failure(path + ": " + std::strerror(errno));  // e.g. the daemon died: not connected
    std::ostringstream text;
    text << file.rdbuf();
    if (file.bad()) return failure(path + ": " + std::strerror(errno));
    const Json stats = Json::parse(text.str(), nullptr, false);
    if (stats.is_discarded() || !stats.is_object()) return failure(path + ": not the JSON of a tensorfs mount");

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
