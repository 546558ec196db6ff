// `tensorfs prefetch SOURCE [--tensors GLOB] [--files GLOB] [--quiet] [--verify]`: fills the disk cache with what
// a mount of SOURCE would fetch, at the full parallel speed of the source (max_connections range requests in
// flight), so that a node is warm before a job starts. The files land in tensorfs's cache, where a mount, `cat` or
// `convert` of the same SOURCE read them; a second run finds everything there and fetches nothing.
//
// What is fetched: every weight file whole (headers and padding included), or with --tensors only the bytes of
// the tensors whose names match, or with --files only the weight files whose paths (relative to SOURCE) match.
// --verify then compares each whole file with the checksum its source publishes, where it publishes one.
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "arguments.hpp"
#include "commands.hpp"
#include "loaded_source.hpp"
#include "mount_options.hpp"
#include "progress_line.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/remote_source.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

struct Span {
    std::uint64_t begin;
    std::uint64_t end;
};

// Per file, the byte ranges to fetch, sorted and merged.
using Wanted = std::map<std::uint32_t, std::vector<Span>>;

Wanted wanted_of(const Catalog& catalog, const std::optional<std::string>& tensors,
                 const std::optional<std::string>& files) {
    Wanted wanted;
    for (std::uint32_t i = 0; i < catalog.files.size(); ++i) {
        const SourceFile& file = catalog.files[i];
        if (files && ::fnmatch(files->c_str(), file.display.c_str(), 0) != 0) continue;
        if (!tensors) {
            wanted[i].push_back(Span{0, file.size});
            continue;
        }
        for (const Tensor& tensor : catalog.tensors) {
            if (tensor.file != i || ::fnmatch(tensors->c_str(), tensor.name.c_str(), 0) != 0) continue;
            wanted[i].push_back(Span{tensor.offset, tensor.offset + tensor.nbytes});
        }
    }
    for (auto& [file, spans] : wanted) {
        std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
        std::vector<Span> merged;
        for (const Span& span : spans) {
            if (!merged.empty() && span.begin <= merged.back().end) {
                merged.back().end = std::max(merged.back().end, span.end);
            } else {
                merged.push_back(span);
            }
        }
        spans = std::move(merged);
    }
    return wanted;
}

// --verify: each whole file's bytes (from the disk cache now) against the checksum its source publishes. A file
// that does not match loses its cached blocks, and the command fails naming it.
int verify(const Catalog& catalog, const Wanted& wanted, bool only_tensors) {
    int status = 0;
    for (const auto& [file, spans] : wanted) {
        const SourceFile& source_file = catalog.files[file];
        if (only_tensors) {
            std::printf("%s: not verified (only some tensors were fetched)\n", source_file.display.c_str());
            continue;
        }
        try {
            const std::optional<bool> matches = source_file.object->matches_published_checksum();
            if (!matches) {
                std::printf("%s: no checksum\n", source_file.display.c_str());
            } else if (*matches) {
                std::printf("%s: checksum matches\n", source_file.display.c_str());
            } else {
                source_file.object->evict_cached();
                status = failure(source_file.path + ": does not match the checksum its source publishes; its "
                                 "cached blocks were removed");
            }
        } catch (const IoError& error) {
            status = failure(error.what());
        }
    }
    return status;
}

}  // namespace

int prefetch_command(const Arguments& args) {
    std::vector<std::string_view> with_values = kSourceFlags;
    with_values.insert(with_values.end(), {"--tensors", "--files", "-o"});
    const SplitArguments split = split_arguments(args, {"--quiet", "--verify"}, with_values);
    if (!split.error.empty()) return usage_error(split.error);
    MountOptions options;
    if (const auto found = split.values.find("-o"); found != split.values.end()) {
        if (const std::string error = take_option_list(found->second, options); !error.empty()) {
            return usage_error(error);
        }
    }
    if (const std::string error = take_source_flags(split, options.source_options); !error.empty()) {
        return usage_error(error);
    }
    if (split.positional.size() != 1) return usage_error("prefetch needs SOURCE");
    if (options.source_options.disk_cache_size == 0) return usage_error("prefetch fills the disk cache: it is off");
    std::optional<std::string> tensors;
    std::optional<std::string> files;
    if (const auto found = split.values.find("--tensors"); found != split.values.end()) tensors = found->second;
    if (const auto found = split.values.find("--files"); found != split.values.end()) files = found->second;

    const std::string& source_name = split.positional[0];
    const LoadedSource source(source_name, options.source_options);
    const Wanted wanted = wanted_of(source.catalog, tensors, files);
    if (wanted.empty() || std::all_of(wanted.begin(), wanted.end(), [](const auto& w) { return w.second.empty(); })) {
        return failure(source_name + ": nothing matches " + (tensors ? "--tensors " + *tensors : "") +
                       (tensors && files ? " and " : "") + (files ? "--files " + *files : ""));
    }
    std::uint64_t total = 0;
    for (const auto& [file, spans] : wanted) {
        for (const Span& span : spans) total += span.end - span.begin;
    }

    const auto started = std::chrono::steady_clock::now();
    std::optional<ProgressLine> progress_line;
    if (!split.has("--quiet")) progress_line.emplace("prefetching " + shown_source(source_name), total);
    std::mutex progress_mutex;
    std::uint64_t done = 0;
    const SourceObject::Progress progress = [&](std::uint64_t bytes) {
        const std::lock_guard lock(progress_mutex);
        done += bytes;
        if (progress_line) progress_line->update(done);
    };
    std::uint64_t fetched = 0;
    try {
        for (const auto& [file, spans] : wanted) {
            const SourceObject& object = *source.catalog.files[file].object;
            for (const Span& span : spans) fetched += object.fill_cache(span.begin, span.end - span.begin, progress);
        }
    } catch (const IoError& error) {
        if (progress_line) progress_line->abandon();
        return failure(error.what());
    }
    if (progress_line) progress_line->finish(done);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const auto rate = static_cast<std::uint64_t>(seconds > 0 ? static_cast<double>(fetched) / seconds : 0);
    if (split.has("--verify")) {
        if (const int status = verify(source.catalog, wanted, tensors.has_value()); status != 0) return status;
    }
    std::printf("%s fetched (%llu bytes) in %.2f s, %s/s; %s already cached\n", human_size(fetched).c_str(),
                static_cast<unsigned long long>(fetched), seconds, human_size(rate).c_str(),
                human_size(total - std::min(total, fetched)).c_str());
    return 0;
}

}  // namespace tensorfs::cli
