// `tensorfs cache [--cache-dir DIR] ls|du|prune|clear`: what the disk cache of remote sources holds, and trimming it.
// The folder's layout and its removal of blocks are the remote layer's (DiskCache, scan_cache_folder,
// remove_least_recent): the same code that mounts use, under the same lock, so that pruning while mounts read is
// as safe as their own eviction.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "arguments.hpp"
#include "commands.hpp"
#include "hidden_secrets.hpp"
#include "remote/disk_cache.hpp"
#include "tensorfs/suggestions.hpp"
#include "tensorfs/size_option.hpp"
#include "tensorfs/source_options.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

using remote::StoredBlock;
using remote::StoredObject;

bool earlier(const timespec& a, const timespec& b) {
    return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
}

// The line of the key that starts with `prefix`, without it ("" when absent). The key's first line is the URL.
std::string key_line(const std::string& key, const std::string& prefix) {
    std::size_t start = 0;
    while (start < key.size()) {
        const std::size_t end = std::min(key.find('\n', start), key.size());
        const std::string line = key.substr(start, end - start);
        if (line.starts_with(prefix)) return line.substr(prefix.size());
        start = end + 1;
    }
    return {};
}

std::string url_of(const StoredObject& object) {
    if (object.key.empty()) return "(unknown: " + object.folder.filename().string() + ")";
    return with_passwords_hidden(object.key.substr(0, object.key.find('\n')));
}

std::uint64_t bytes_of(const StoredObject& object) {
    std::uint64_t total = 0;
    for (const StoredBlock& block : object.blocks) total += block.size;
    return total;
}

std::string time_text(const timespec& when) {
    char text[32];
    std::tm local{};
    ::localtime_r(&when.tv_sec, &local);
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
    return text;
}

// "30s", "15m", "12h", "7d", "2w". A plain number is refused: 3 could be seconds or days, and evicting what
// was read 4 s ago is no way to learn which.
std::optional<std::int64_t> parse_duration(const std::string& text) {
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front()))) return std::nullopt;
    std::size_t used = 0;
    long long count = 0;
    try {
        count = std::stoll(text, &used);
    } catch (...) {
        return std::nullopt;
    }
    const std::string unit = text.substr(used);
    std::int64_t seconds = 0;
    if (unit == "s") {
        seconds = 1;
    } else if (unit == "m") {
        seconds = 60;
    } else if (unit == "h") {
        seconds = 3600;
    } else if (unit == "d") {
        seconds = 86400;
    } else if (unit == "w") {
        seconds = 7 * 86400;
    } else {
        return std::nullopt;
    }
    if (count > INT64_MAX / seconds) return std::nullopt;
    return count * seconds;
}

std::vector<StoredObject> cached(const std::filesystem::path& folder) {
    std::vector<StoredObject> objects = remote::scan_cache_folder(folder, false);
    // Folders left with no block (after a clear) are no cached sources.
    std::erase_if(objects, [](const StoredObject& object) { return object.blocks.empty(); });
    return objects;
}

int list(const std::filesystem::path& folder) {
    const std::vector<StoredObject> objects = cached(folder);
    if (objects.empty()) {
        std::printf("the disk cache %s holds nothing\n", folder.parent_path().c_str());
        return 0;
    }
    Table table({Align::Left, Align::Left, Align::Right, Align::Right, Align::Left});
    table.add_row({"URL", "ETAG", "CACHED", "BLOCKS", "LAST READ"});
    for (const StoredObject& object : objects) {
        timespec last{};
        for (const StoredBlock& block : object.blocks) last = earlier(last, block.used) ? block.used : last;
        std::string identity = key_line(object.key, "etag ");
        if (identity.empty()) identity = key_line(object.key, "last-modified ");
        table.add_row({visible(url_of(object)), visible(identity.empty() ? "-" : identity),
                       human_size(bytes_of(object)), std::to_string(object.blocks.size()), time_text(last)});
    }
    std::fputs(table.render().c_str(), stdout);
    return 0;
}

int disk_usage(const std::filesystem::path& folder, std::uint64_t budget, bool budget_given) {
    const std::vector<StoredObject> objects = cached(folder);
    std::uint64_t total = 0;
    std::size_t blocks = 0;
    for (const StoredObject& object : objects) {
        total += bytes_of(object);
        blocks += object.blocks.size();
    }
    char share[32] = "";
    if (budget > 0) {
        const double percent = 100.0 * static_cast<double>(total) / static_cast<double>(budget);
        std::snprintf(share, sizeof share, " (%.1f%%)", percent);
    }
    std::printf("%s (%llu bytes) in %zu blocks of %zu objects, of disk_cache_size %s%s%s\n", human_size(total).c_str(),
                static_cast<unsigned long long>(total), blocks, objects.size(), human_size(budget).c_str(),
                budget_given ? "" : " (the default)", share);
    std::printf("folder: %s\n", folder.parent_path().c_str());
    return 0;
}

// prune and clear: blocks removed under the eviction lock that mounts take for theirs.
int remove_blocks(const std::filesystem::path& folder, std::uint64_t keep_bytes,
                  std::optional<timespec> used_before, bool whole_objects) {
    const int lock = remote::lock_for_eviction(folder, true);
    if (lock < 0 && std::filesystem::exists(folder)) return failure(folder.string() + ": cannot lock it");
    std::vector<StoredBlock> blocks;
    std::uint64_t before = 0;
    const std::vector<StoredObject> objects = remote::scan_cache_folder(folder, true);
    for (const StoredObject& object : objects) {
        before += bytes_of(object);
        blocks.insert(blocks.end(), object.blocks.begin(), object.blocks.end());
    }
    const std::size_t count = blocks.size();
    const std::uint64_t left = remote::remove_least_recent(std::move(blocks), keep_bytes, used_before);
    if (whole_objects) {
        // Their keys and folders too, where no block came meanwhile (a mount writing one makes its folder again).
        for (const StoredObject& object : objects) {
            ::unlink((object.folder / "key").c_str());
            ::rmdir(object.folder.c_str());
        }
        remote::forget_every_url(folder);
    }
    if (lock >= 0) ::close(lock);
    std::printf("removed %s, %s left (%zu block%s scanned)\n", human_size(before - left).c_str(),
                human_size(left).c_str(), count, count == 1 ? "" : "s");
    return 0;
}

}  // namespace

int cache_command(const Arguments& args) {
    // The cache's own flags: it reads no SOURCE, so --timeout is not among them.
    const SplitArguments split =
        split_arguments(args, {}, {"--cache-dir", "--disk-cache-size", "--older-than", "--max-size"});
    if (!split.error.empty()) return usage_error(split.error);
    if (split.positional.empty()) return usage_error("cache needs ls, du, prune or clear");
    const std::string& action = split.positional[0];
    if (action != "ls" && action != "du" && action != "prune" && action != "clear") {
        return usage_error("cache: no action '" + action + "' (ls, du, prune, clear)" +
                           did_you_mean(action, {"ls", "du", "prune", "clear"}));
    }
    if (split.positional.size() > 1) return usage_error("cache: unexpected argument '" + split.positional[1] + "'");
    Settings settings;
    if (const std::string error = take_source_flags(split, settings); !error.empty()) return usage_error(error);
    const SourceOptions& options = settings.source;
    const auto older_than = split.values.find("--older-than");
    const auto max_size = split.values.find("--max-size");
    if (action != "prune" && (older_than != split.values.end() || max_size != split.values.end())) {
        return usage_error("--older-than and --max-size are for cache prune");
    }
    if (action != "du" && split.values.count("--disk-cache-size") != 0) {
        return usage_error("--disk-cache-size is for cache du");
    }
    // A folder that is not there holds nothing, but one named that is not there is most likely a typo.
    if (!options.cache_dir.empty() && !std::filesystem::is_directory(options.cache_dir)) {
        return failure(options.cache_dir.string() + ": no such folder");
    }
    // The folder a mount with the same options uses (DIR/v1), named the way DiskCache names it.
    const remote::DiskCache cache(options.cache_dir.empty() ? default_cache_dir() : options.cache_dir, 0);
    const std::filesystem::path& folder = cache.folder();

    if (action == "ls") return list(folder);
    if (action == "du") {
        return disk_usage(folder, options.disk_cache_size, split.values.count("--disk-cache-size") != 0);
    }
    if (action == "clear") return remove_blocks(folder, 0, std::nullopt, true);

    if (older_than == split.values.end() && max_size == split.values.end()) {
        return usage_error("cache prune needs --older-than DURATION or --max-size SIZE");
    }
    std::optional<timespec> used_before;
    if (older_than != split.values.end()) {
        const auto seconds = parse_duration(older_than->second);
        if (!seconds) {
            return usage_error("bad --older-than '" + older_than->second +
                               "': a number and its unit, s, m, h, d or w (e.g. 30m, 12h, 7d)");
        }
        timespec now{};
        ::clock_gettime(CLOCK_REALTIME, &now);
        used_before = timespec{now.tv_sec - static_cast<time_t>(*seconds), now.tv_nsec};
    }
    std::uint64_t keep_bytes = UINT64_MAX;
    if (max_size != split.values.end()) {
        const auto size = parse_size(max_size->second);
        if (!size) return usage_error("bad --max-size '" + max_size->second + "' (e.g. 500M, 2G)");
        keep_bytes = *size;
    }
    return remove_blocks(folder, keep_bytes, used_before, false);
}

}  // namespace tensorfs::cli
