// `tensorfs prefetch SOURCE [--tensors GLOB] [--files GLOB] [--quiet] [--verify]`: fills the disk cache with what
// a mount of SOURCE would fetch, at the full parallel speed of the source (max_connections range requests in
// flight), so that a node is warm before a job starts. The files land in tensorfs's cache, where a mount, `cat` or
// `convert` of the same SOURCE read them; a second run finds everything there and fetches nothing.
//
// What is fetched: every weight file whole (headers and padding included); with --files instead, every file the
// mount shows in source/ (and the side files at its root) whose path relative to SOURCE matches, weights or not
// (config.json, the tokenizer files); with --tensors only the bytes of the tensors whose names match (in the weight
// files that match --files too, when both are given).
// --verify then compares each whole file with the checksum its source publishes, where it publishes one.
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "commands.hpp"
#include "model_choice.hpp"
#include "tensorfs/engine.hpp"
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

// One file to fetch: its path relative to SOURCE (as source/ shows it), and the byte ranges, sorted and merged.
struct WantedFile {
    std::string path;
    std::shared_ptr<const SourceObject> object;
    std::vector<Span> spans;
};

std::vector<Span> merged(std::vector<Span> spans) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    std::vector<Span> result;
    for (const Span& span : spans) {
        if (!result.empty() && span.begin <= result.back().end) {
            result.back().end = std::max(result.back().end, span.end);
        } else {
            result.push_back(span);
        }
    }
    return result;
}

bool matches(const std::optional<std::string>& glob, const std::string& path) {
    return !glob || ::fnmatch(glob->c_str(), path.c_str(), 0) == 0;
}

// The weight files of the model, whole, or the bytes of the tensors that match `tensors` (a quantized weight's with
// all its parts': its values are made from them).
std::vector<WantedFile> weights_wanted(const Catalog& catalog, const std::optional<std::string>& tensors,
                                       const std::optional<std::string>& files) {
    std::vector<WantedFile> wanted;
    for (std::uint32_t i = 0; i < catalog.files.size(); ++i) {
        const SourceFile& file = catalog.files[i];
        if (!matches(files, file.display)) continue;
        std::vector<Span> spans;
        if (!tensors) spans.push_back(Span{0, file.size});
        for (const Tensor& tensor : catalog.tensors) {
            if (!tensors || !matches(tensors, tensor.name)) continue;
            if (tensor.file == i) spans.push_back(Span{tensor.offset, tensor.offset + tensor.nbytes});
            if (!tensor.quantization) continue;
            for (const QuantizedPart& part : tensor.quantization->parts) {
                const Tensor& stored = part.stored;
                if (stored.file == i) spans.push_back(Span{stored.offset, stored.offset + stored.nbytes});
            }
        }
        if (!spans.empty()) wanted.push_back(WantedFile{file.display, file.object, merged(std::move(spans))});
    }
    return wanted;
}

// --files: every file a mount shows in source/, and the side files at its root that source/ does not show (those
// probed next to a SOURCE that names one file), whole, when their path matches.
std::vector<WantedFile> files_wanted(const ModelFolder& folder, const std::string& glob) {
    std::vector<WantedFile> wanted;
    std::set<std::string> seen;
    for (const auto* files : {&folder.source_files, &folder.side_files}) {
        for (const FolderFile& file : *files) {
            if (!seen.insert(file.path).second || !matches(glob, file.path)) continue;
            wanted.push_back(WantedFile{file.path, file.object, {Span{0, file.object->size()}}});
        }
    }
    return wanted;
}

// --verify: each whole file's bytes, read as a mount reads them (from the blocks still in memory, else the disk
// cache), against the checksum its source publishes. A file that does not match loses its cached blocks, and the
// command fails naming it.
int verify(const std::vector<WantedFile>& wanted, bool only_tensors) {
    int status = 0;
    for (const WantedFile& file : wanted) {
        if (only_tensors) {
            std::printf("%s: not verified (only some tensors were fetched)\n", file.path.c_str());
            continue;
        }
        try {
            const auto check = file.object->check_published_checksum();
            if (!check) {
                std::printf("%s: no checksum\n", file.path.c_str());
            } else if (check->matches) {
                std::printf("%s: checksum matches (%s)\n", file.path.c_str(), check->checksum.c_str());
            } else {
                file.object->evict_cached();
                status = failure(file.object->name() + ": does not match the checksum its source publishes (" +
                                 check->checksum + "); its cached blocks were removed");
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
    with_values.insert(with_values.end(), {"--tensors", "--files"});
    const SplitArguments split = split_arguments(args, {"--quiet", "--verify"}, with_values);
    if (!split.error.empty()) return usage_error(split.error);
    Settings settings;
    if (const std::string error = take_source_flags(split, settings); !error.empty()) return usage_error(error);
    if (const std::string problem = positional_problem("prefetch", split.positional, {"SOURCE"}); !problem.empty()) {
        return usage_error(problem);
    }
    const std::string& source_name = split.positional[0];
    if (!is_remote_source(source_name)) {
        // Local files have no disk cache: they are read in place, and the page cache is the kernel's.
        if (!std::filesystem::exists(source_name)) return failure(source_name + ": no such file or folder");
        std::printf("%s: a local source is read in place, with no disk cache: nothing to prefetch\n",
                    source_name.c_str());
        return 0;
    }
    if (settings.source.disk_cache_size == 0) {
        return usage_error("the disk cache is off (disk_cache_size=0), so prefetch has nothing to fill");
    }
    std::optional<std::string> tensors;
    std::optional<std::string> files;
    if (const auto found = split.values.find("--tensors"); found != split.values.end()) tensors = found->second;
    if (const auto found = split.values.find("--files"); found != split.values.end()) files = found->second;

    std::vector<WantedFile> wanted;
    const Engine engine(source_name, settings);
    if (files && !tensors) {
        wanted = files_wanted(engine.folder(), *files);
    } else {
        engine.require_model(kModelFlag);
        wanted = weights_wanted(engine.catalog(), tensors, files);
    }
    if (wanted.empty()) {
        return failure(source_name + ": nothing matches " + (tensors ? "--tensors " + *tensors : "") +
                       (tensors && files ? " and " : "") + (files ? "--files " + *files : ""));
    }
    std::uint64_t total = 0;
    for (const WantedFile& file : wanted) {
        for (const Span& span : file.spans) total += span.end - span.begin;
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
        for (const WantedFile& file : wanted) {
            for (const Span& span : file.spans) {
                fetched += file.object->fill_cache(span.begin, span.end - span.begin, progress);
            }
        }
    } catch (const IoError& error) {
        if (progress_line) progress_line->abandon();
        return failure(error.what());
    }
    if (progress_line) progress_line->finish(done);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const auto rate = static_cast<std::uint64_t>(seconds > 0 ? static_cast<double>(fetched) / seconds : 0);
    if (split.has("--verify")) {
        if (const int status = verify(wanted, tensors.has_value()); status != 0) return status;
    }
    std::printf("%s fetched (%llu bytes) in %.2f s, %s/s; %s already cached\n", human_size(fetched).c_str(),
                static_cast<unsigned long long>(fetched), seconds, human_size(rate).c_str(),
                human_size(total - std::min(total, fetched)).c_str());
    return 0;
}

}  // namespace tensorfs::cli
