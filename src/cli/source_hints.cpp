#include "source_hints.hpp"

#include <cstdio>
#include <filesystem>
#include <regex>
#include <system_error>

#include "mount_table.hpp"
#include "tensorfs/remote_source.hpp"

namespace tensorfs::cli {
namespace {

namespace fs = std::filesystem;

void note(const std::string& text) { std::fprintf(stderr, "tensorfs: note: %s\n", text.c_str()); }

// The index files beside a local shard, or "" when there is not exactly one.
std::string index_beside(const fs::path& shard, const std::string& weight_suffix) {
    std::string found;
    std::error_code error;
    const fs::path folder = shard.parent_path().empty() ? fs::path(".") : shard.parent_path();
    for (fs::directory_iterator entries(folder, error), end; !error && entries != end; entries.increment(error)) {
        const std::string name = entries->path().filename().string();
        if (!name.ends_with(weight_suffix + ".index.json")) continue;
        if (!found.empty()) return {};
        found = (shard.parent_path() / name).string();
    }
    return found;
}

void note_if_one_shard(const std::string& source) {
    static const std::regex kShard(R"(^(.*)-(\d+)-of-(\d+)(\.safetensors|\.bin)$)");
    std::smatch parts;
    const std::string shown = shown_source(source);  // a URL without its password
    const std::string name = fs::path(shown).filename().string();
    if (!std::regex_match(name, parts, kShard) || std::stoull(parts[3].str()) <= 1) return;
    const std::string folder = fs::path(shown).parent_path().string();
    std::string whole;
    if (is_remote_source(source)) {
        // A web server has no listing, so its folder cannot be mounted: the index, by the name transformers gives it.
        whole = folder + "/" + parts[1].str() + parts[4].str() + ".index.json (the usual name of its index)";
    } else {
        whole = index_beside(source, parts[4].str());
        if (whole.empty()) whole = (folder.empty() ? std::string(".") : folder) + "/ (its folder)";
    }
    note(shown + " is shard " + std::to_string(std::stoull(parts[2].str())) + " of " +
         std::to_string(std::stoull(parts[3].str())) + "; it holds a part of the model's tensors. The whole model: " +
         whole);
}

}  // namespace

std::string source_to_describe(const std::string& source) {
    if (!is_remote_source(source)) {
        if (const auto mounted = mount_at(source); mounted && mounted->type == "fuse.tensorfs") {
            note(source + " is a tensorfs mount of " + mounted->source + "; describing that");
            return mounted->source;
        }
    }
    note_if_one_shard(source);
    return source;
}

}  // namespace tensorfs::cli
