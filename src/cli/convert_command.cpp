// `tensorfs convert SOURCE OUT.safetensors [--dtype keep|bf16|f16|f32] [--force] [--cache-dir DIR]
//                  [--disk-cache-size SIZE]`:
// writes the bytes a mount shows as
// model.safetensors (with -o export_dtype=...), read through the same Content, without FUSE. The file appears under
// its name only once complete; an error or a signal (SIGINT, SIGTERM, SIGHUP) leaves no partial file behind.
#include <signal.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "arguments.hpp"
#include "commands.hpp"
#include "model_choice.hpp"
#include "progress_line.hpp"
#include "replacing_file.hpp"
#include "tensorfs/engine.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/remote_source.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

// Decoded chunks kept while converting: enough for the decode-ahead of the tensor being read.
constexpr std::uint64_t kConvertCacheBudget = std::uint64_t{64} << 20;
// Bytes read from Content and written at a time.
constexpr std::size_t kStep = std::size_t{4} << 20;

volatile std::sig_atomic_t stop_signal = 0;

void remember_signal(int signal_number) { stop_signal = signal_number; }

bool stop_requested() { return stop_signal != 0; }

// Without SA_RESTART, so that a write waiting on a slow disk returns at once.
void catch_stop_signals() {
    struct sigaction action {};
    action.sa_handler = remember_signal;
    sigemptyset(&action.sa_mask);
    for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signal_number, &action, nullptr);
}

// Ends the process as the signal would have, so that the shell sees the interruption.
[[noreturn]] void die_of_stop_signal() {
    const int signal_number = stop_signal;
    ::signal(signal_number, SIG_DFL);
    ::raise(signal_number);
    std::_Exit(128 + signal_number);
}

struct ConvertArguments {
    std::string source;
    std::string target;
    ExportDtype dtype = ExportDtype::Keep;
    bool force = false;
    Settings settings;   // --model PATH, -o and the other flags of a SOURCE
};

// SOURCE OUT and the flags, in any order; "" or the usage problem.
std::string parse(const Arguments& args, ConvertArguments& parsed) {
    std::vector<std::string_view> flags_with_values = kSourceFlags;
    flags_with_values.push_back("--dtype");
    const SplitArguments split = split_arguments(args, {"--force"}, flags_with_values);
    if (!split.error.empty()) return split.error;
    if (std::string error = take_source_flags(split, parsed.settings); !error.empty()) return error;
    if (const auto dtype = split.values.find("--dtype"); dtype != split.values.end()) {
        const auto named = export_dtype_named(dtype->second);
        if (!named) return "bad --dtype '" + dtype->second + "' (keep, bf16, f16 or f32)";
        parsed.dtype = *named;
    }
    if (std::string problem = positional_problem("convert", split.positional, {"SOURCE", "OUT.safetensors"});
        !problem.empty()) {
        return problem;
    }
    parsed.source = split.positional[0];
    parsed.target = split.positional[1];
    parsed.force = split.has("--force");
    return {};
}

// Whether `target` names a file that is not there yet or does not end in .safetensors, unless --force.
std::string suffix_problem(const ConvertArguments& parsed) {
    // (A folder given as OUT is refused as such when it is opened.)
    if (parsed.target.ends_with(".safetensors") || parsed.force || std::filesystem::is_directory(parsed.target)) {
        return {};
    }
    return "convert writes safetensors, and '" + parsed.target +
           "' does not end in .safetensors: name it *.safetensors (--force writes another name, never over a file "
           "of SOURCE)";
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// The file of the local SOURCE that `target` is (the same inode, whatever the path), or "": writing there would
// destroy the source. Every file the SOURCE reads counts: the file named, its index, shards and split parts, and
// for a folder every file under it (what source/ shows).
std::string source_file_at(const ConvertArguments& parsed, const Engine& engine) {
    const std::string& source = parsed.source;
    const std::string& target = parsed.target;
    struct stat target_status {};
    if (is_remote_source(source) || ::stat(target.c_str(), &target_status) != 0) return {};  // not there yet
    std::vector<std::string> paths{source};
    for (const SourceFile& file : engine.catalog().files) paths.push_back(file.path);
    const bool folder = std::filesystem::is_directory(source);
    const std::filesystem::path base = folder ? std::filesystem::path(source)
                                              : std::filesystem::path(source).parent_path();
    for (const FolderFile& file : engine.folder().source_files) {
        paths.push_back((base / file.path).string());
    }
    for (const std::string& path : paths) {
        struct stat status {};
        if (::stat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode) && same_file(status, target_status)) {
            return path;
        }
    }
    return {};
}

std::string tensor_names(const Catalog& catalog, const std::vector<std::uint32_t>& indices) {
    std::string names;
    for (const std::uint32_t index : indices) {
        names += (names.empty() ? "" : ", ") + cli::quoted(catalog.tensors[index].name);
    }
    return names;
}

}  // namespace

int convert_command(const Arguments& args) {
    ConvertArguments parsed;
    if (const std::string problem = parse(args, parsed); !problem.empty()) return usage_error(problem);

    EngineNeeds needs;
    needs.export_dtype = parsed.dtype;
    needs.decoded_budget = kConvertCacheBudget;
    const Engine engine(parsed.source, parsed.settings, needs);
    engine.require_model(kModelFlag);
    // Checked before the suffix, with or without --force: no message may invite writing over the source.
    if (const std::string same = source_file_at(parsed, engine); !same.empty()) {
        const std::string what = same == parsed.source ? "SOURCE" : "SOURCE's file " + same;
        return failure(parsed.target + ": is " + what + "; convert never writes over its own source");
    }
    if (const std::string problem = suffix_problem(parsed); !problem.empty()) return usage_error(problem);
    const ModelExport& exported = *engine.model_export();
    if (!exported.available()) return failure(parsed.source + ": no safetensors file can hold it: " + exported.error());
    if (!exported.skipped().empty()) {
        std::fprintf(stderr, "tensorfs: %s: left out, having no safetensors dtype and no float32 values: %s\n",
                     parsed.source.c_str(), tensor_names(engine.catalog(), exported.skipped()).c_str());
    }
    Content& content = engine.content();
    const Node node{NodeKind::ModelSafetensors};
    const std::uint64_t size = content.size(node);

    catch_stop_signals();
    ReplacingFile output(parsed.target);
    ProgressLine progress("writing " + parsed.target, size);
    std::vector<char> buffer(kStep);
    std::uint64_t done = 0;
    try {
        while (done < size && !stop_requested()) {
            const std::size_t got = content.read(node, done, buffer.size(), buffer.data());
            if (got == 0) throw IoError(parsed.source + ": the source ended early");
            if (!output.write(buffer.data(), got, stop_requested)) break;
            done += got;
            progress.update(done);
        }
        if (stop_requested()) {
            progress.abandon();
            output.discard();
            die_of_stop_signal();
        }
        output.commit();
    } catch (...) {
        progress.abandon();
        throw;   // main() prints it; the output's destructor removes the partial file
    }
    progress.finish(done);
    return 0;
}

}  // namespace tensorfs::cli
