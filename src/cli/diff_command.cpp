// `tensorfs diff A B [--tensors GLOB] [--names same|gguf|auto] [--json|--csv] [--quiet]`: how far checkpoint B is
// from checkpoint A, tensor by tensor (error metrics of their float32 values), without FUSE. Exit status as cmp's
// and diff's: 0 when every paired value is equal and nothing is unpaired, 1 when anything differs, 2 on an error.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "arguments.hpp"
#include "commands.hpp"
#include "compare/diff_compare.hpp"
#include "compare/diff_pairs.hpp"
#include "diff_report.hpp"
#include "model_choice.hpp"
#include "progress_line.hpp"
#include "tensorfs/errors.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

using namespace compare;

constexpr int kTrouble = 2;

struct DiffArguments {
    std::string a, b;
    std::string glob;
    NameMode names = NameMode::Auto;
    DiffFormat format = DiffFormat::Table;
    bool quiet = false;
    Settings settings;   // the flags of a SOURCE; --model PATH: the same model path in both A and B
};

// "" or the usage problem.
std::string parse(const Arguments& args, DiffArguments& parsed) {
    std::vector<std::string_view> flags_with_values = kSourceFlags;
    flags_with_values.insert(flags_with_values.end(), {"--tensors", "--names"});
    const SplitArguments split = split_arguments(args, {"--json", "--csv", "--quiet"}, flags_with_values);
    if (!split.error.empty()) return split.error;
    if (std::string error = take_source_flags(split, parsed.settings); !error.empty()) return error;
    if (split.positional.size() != 2) return "diff needs A and B";
    parsed.a = split.positional[0];
    parsed.b = split.positional[1];
    if (split.has("--json") && split.has("--csv")) return "diff takes one of --json, --csv";
    parsed.format = split.has("--json") ? DiffFormat::Json : split.has("--csv") ? DiffFormat::Csv : DiffFormat::Table;
    parsed.quiet = split.has("--quiet");
    if (const auto glob = split.values.find("--tensors"); glob != split.values.end()) {
        if (glob->second.empty()) return "--tensors needs a GLOB";
        parsed.glob = glob->second;
    }
    if (const auto names = split.values.find("--names"); names != split.values.end()) {
        if (names->second == "same") {
            parsed.names = NameMode::Same;
        } else if (names->second == "gguf") {
            parsed.names = NameMode::Gguf;
        } else if (names->second != "auto") {
            return "bad --names '" + names->second + "' (same, gguf or auto)";
        }
    }
    return {};
}

int run_diff(const DiffArguments& parsed) {
    // The budget is shared by both sides: each keeps half of its decoded values' share.
    const std::uint64_t half = parsed.settings.decoded_budget(false) / 2;
    DiffSide a(parsed.a, parsed.settings, half, kModelFlag);
    DiffSide b(parsed.b, parsed.settings, half, kModelFlag);
    const Pairing pairing = pair_tensors(a.catalog(), b.catalog(), parsed.names, parsed.glob);
    if (!parsed.glob.empty() && pairing.pairs.empty()) {
        failure("no tensor of " + parsed.a + " or " + parsed.b + " matches --tensors " + cli::quoted(parsed.glob));
        return kTrouble;
    }

    std::uint64_t total = 0;
    for (const TensorPair& pair : pairing.pairs) total += values_bytes(a, b, pair);
    DiffReport report{a, b, pairing.mode, {}};
    const std::string tensors = std::to_string(pairing.pairs.size());
    ProgressLine progress("comparing 0/" + tensors + " tensors", total, !parsed.quiet);
    std::uint64_t done = 0;
    const auto progressed = [&](std::uint64_t bytes) {
        done += bytes;
        progress.update(done);
    };
    try {
        for (const TensorPair& pair : pairing.pairs) {
            progress.rename("comparing " + std::to_string(report.results.size() + 1) + "/" + tensors + " tensors");
            report.results.push_back(compare_pair(a, b, pair, progressed));
        }
    } catch (...) {
        progress.abandon();
        throw;
    }
    progress.finish(done);
    print_report(report, parsed.format, parsed.quiet);
    return exit_status_of(report);
}

}  // namespace

int diff_command(const Arguments& args) {
    DiffArguments parsed;
    if (const std::string problem = parse(args, parsed); !problem.empty()) {
        usage_error(problem);
        return kTrouble;
    }
    // As cmp and diff, trouble is status 2, apart from 1 (the checkpoints differ).
    try {
        const int status = run_diff(parsed);
        if (std::fflush(stdout) == 0) return status;
        failure("cannot write the report");
    } catch (const SourceError& invalid) {
        for (const auto& problem : invalid.problems()) std::fprintf(stderr, "%s\n", problem.line().c_str());
    } catch (const std::exception& error) {
        failure(error.what());
    }
    return kTrouble;
}

}  // namespace tensorfs::cli
