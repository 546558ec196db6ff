// Single-thread dequant throughput, in GB/s of float32 output, for every ggml type the table can decode:
// portable kernel, fast kernel (where there is one and the CPU runs it), and memcpy of the same output size
// measured in between, so every row carries its own reference under the machine's current load. The output
// (~250 MB by default) is larger than the last-level cache, so the figures include the trip to memory.
// Each figure is the best of several repetitions; the destination is written once beforehand so page faults
// are not timed. Prints a Markdown table, with the ratio to ggml's own (plain C) dequantizer where the issue
// gives its figure.
//
// Usage: bench_dequant [--mb MEGABYTES] [--reps N] [--types Q4_K,Q8_0,...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "random_blocks.hpp"
#include "tensorfs/dtype.hpp"

using namespace tensorfs;

namespace {

struct Options {
    double output_mb = 250;
    int reps = 5;
    std::vector<std::string> types;  // empty: every type with a kernel
};

// ggml's dequantize_row_* (plain C) on this kind of machine, one thread, 250 MB working set (issue 3), and
// the multiple of it each fast kernel must reach.
struct Bar {
    std::string_view type;
    double gb_per_s;
    double target_ratio;
};
constexpr Bar kGgmlBars[] = {{"Q8_0", 7.4, 1}, {"Q4_K", 7.2, 1}, {"Q5_K", 6.8, 1},   {"Q4_0", 4.4, 2},
                             {"IQ4_XS", 2.3, 2}, {"MXFP4", 2.3, 2}, {"Q6_K", 1.9, 2}};

std::optional<Bar> ggml_bar(std::string_view type) {
    for (const Bar& bar : kGgmlBars) {
        if (bar.type == type) return bar;
    }
    return std::nullopt;
}

[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr, "bench_dequant: %s\nusage: bench_dequant [--mb MEGABYTES] [--reps N] [--types A,B,...]\n",
                 message.c_str());
    std::exit(2);
}

Options parse_options(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) usage_error("missing value after " + arg);
        const std::string value = argv[++i];
        if (arg == "--mb") {
            options.output_mb = std::atof(value.c_str());
            if (!(options.output_mb >= 1 && options.output_mb <= 16384)) usage_error("--mb must be in 1..16384");
        } else if (arg == "--reps") {
            options.reps = std::atoi(value.c_str());
            if (options.reps < 1 || options.reps > 1000) usage_error("--reps must be in 1..1000");
        } else if (arg == "--types") {
            std::stringstream list(value);
            for (std::string name; std::getline(list, name, ',');) options.types.push_back(name);
        } else {
            usage_error("unknown option " + arg);
        }
    }
    return options;
}

bool cpu_runs_fast_kernels() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

std::string cpu_model() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    }
    return "unknown CPU";
}

template <typename Work>
double seconds_of(Work&& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Row {
    double portable = 0, fast = 0, memcpy = 0;  // best GB/s; fast stays 0 without a fast kernel
};

Row measure(const TypeTraits& type, double output_mb, int reps, const std::vector<char>& copy_source) {
    const std::size_t nblocks = static_cast<std::size_t>(output_mb * 1e6) / (std::size_t{4} * type.block_elements);
    const std::size_t output_bytes = nblocks * type.block_elements * 4;
    const auto stored = test::random_blocks(type, nblocks, 42, test::Scales::finite);
    std::vector<float> output(nblocks * type.block_elements, 1.0f);  // written once: no page faults timed
    const bool with_fast = type.fast != nullptr && cpu_runs_fast_kernels();

    auto gb_per_s = [&](double seconds) { return static_cast<double>(output_bytes) / seconds / 1e9; };
    Row best;
    for (int r = 0; r < reps; ++r) {
        best.memcpy = std::max(best.memcpy, gb_per_s(seconds_of([&] {
            std::memcpy(output.data(), copy_source.data(), output_bytes);
        })));
        best.portable = std::max(best.portable, gb_per_s(seconds_of([&] {
            type.portable(stored.data(), nblocks, output.data());
        })));
        if (with_fast) {
            best.fast = std::max(best.fast, gb_per_s(seconds_of([&] {
                type.fast(stored.data(), nblocks, output.data());
            })));
        }
    }
    return best;
}

std::vector<const TypeTraits*> types_to_measure(const Options& options) {
    std::vector<const TypeTraits*> types;
    for (std::uint32_t id = 0; id < 256; ++id) {
        const TypeTraits* type = ggml_type_by_id(id);
        if (type == nullptr || !type->has_dequant()) continue;
        if (!options.types.empty() &&
            std::find(options.types.begin(), options.types.end(), type->name) == options.types.end()) {
            continue;
        }
        types.push_back(type);
    }
    // Fast-path types first, each group by name.
    std::stable_sort(types.begin(), types.end(), [](const TypeTraits* a, const TypeTraits* b) {
        if ((a->fast != nullptr) != (b->fast != nullptr)) return a->fast != nullptr;
        return a->name < b->name;
    });
    for (const std::string& wanted : options.types) {
        const bool known = std::any_of(types.begin(), types.end(), [&](const TypeTraits* t) { return t->name == wanted; });
        if (!known) usage_error("no ggml type with a kernel is called " + wanted);
    }
    if (types.empty()) usage_error("no type with a kernel to measure");
    return types;
}

std::string target_verdict(const Bar& bar, double fast) {
    const double wanted = bar.gb_per_s * bar.target_ratio;
    char text[64];
    if (fast >= wanted) {
        std::snprintf(text, sizeof text, "met (>= %.3gx)", bar.target_ratio);
    } else {
        std::snprintf(text, sizeof text, "MISSED (>= %.3gx): %.0f%% short", bar.target_ratio,
                      100 * (1 - fast / wanted));
    }
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse_options(argc, argv);
    const auto types = types_to_measure(options);
    std::vector<char> copy_source(static_cast<std::size_t>(options.output_mb * 1e6), 1);

    std::printf("CPU: %s; fast kernels %s; output %.0f MB per run; best of %d; GB/s of float32 output, one thread\n\n",
                cpu_model().c_str(), cpu_runs_fast_kernels() ? "active (AVX2/F16C/FMA)" : "unavailable (no AVX2)",
                options.output_mb, options.reps);
    std::printf("| type | portable | fast | memcpy | fast / memcpy | ggml bar | fast / bar | target |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (const TypeTraits* type : types) {
        const Row row = measure(*type, options.output_mb, options.reps, copy_source);
        const std::string name(type->name);
        char fast[32] = "-", fast_vs_memcpy[32] = "-", bar[32] = "-", ratio[32] = "-";
        std::string verdict = "-";
        if (row.fast > 0) {
            std::snprintf(fast, sizeof fast, "%.2f", row.fast);
            std::snprintf(fast_vs_memcpy, sizeof fast_vs_memcpy, "%.2f", row.fast / row.memcpy);
        }
        if (const auto ggml = ggml_bar(name)) {
            const double ours = row.fast > 0 ? row.fast : row.portable;
            std::snprintf(bar, sizeof bar, "%.1f", ggml->gb_per_s);
            std::snprintf(ratio, sizeof ratio, "%.2f", ours / ggml->gb_per_s);
            verdict = target_verdict(*ggml, ours);
        }
        std::printf("| %s | %.2f | %s | %.2f | %s | %s | %s | %s |\n", name.c_str(), row.portable, fast, row.memcpy,
                    fast_vs_memcpy, bar, ratio, verdict.c_str());
        std::fflush(stdout);
    }
    return 0;
}
