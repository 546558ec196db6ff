// Single-thread dequant throughput, in GB/s of float32 output per second of the thread's CPU time, for every type
// the table can decode: ggml's own to_float (when given the library scripts/bench-dequant builds), the portable
// kernel, the kernel of each fast path this CPU runs, and memcpy of the same output size, measured in turns within
// each repetition so that every row carries its own references under the machine's load of that moment. The output
// (~256 MB by default) is larger than the last-level cache, so the figures include the trip to memory. Each figure
// is the best of several repetitions; the destination starts on a cache line and is written once beforehand so
// page faults are not timed. Inputs are random blocks with finite f16 scales. The last column checks that ggml's
// floats and ours are the same (NaNs only by position).
//
// Usage: bench_dequant [--ggml LIBRARY] [--mb MEGABYTES] [--reps N] [--types Q4_K,Q8_0,...]
//   LIBRARY: a shared library exporting tensorfs_bench_ggml_to_float (bench/ggml_to_float.cpp, linked to ggml)
#include <dlfcn.h>

#include <algorithm>
#include <bit>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "random_blocks.hpp"
#include "tensorfs/dtype.hpp"

using namespace tensorfs;

namespace {

// ggml's ggml_to_float_t, and the lookup bench/ggml_to_float.cpp exports.
using GgmlToFloat = void (*)(const void* x, float* y, std::int64_t k);
using GgmlLookup = GgmlToFloat (*)(int type);

struct Options {
    std::string ggml_library;  // empty: no ggml column
    double output_mb = 256;
    int reps = 5;
    std::vector<std::string> types;  // empty: every type with a kernel
};

[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr,
                 "bench_dequant: %s\nusage: bench_dequant [--ggml LIBRARY] [--mb MEGABYTES] [--reps N] "
                 "[--types A,B,...]\n",
                 message.c_str());
    std::exit(2);
}

Options parse_options(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) usage_error("missing value after " + arg);
        const std::string value = argv[++i];
        if (arg == "--ggml") {
            options.ggml_library = value;
        } else if (arg == "--mb") {
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

GgmlLookup load_ggml(const std::string& library) {
    if (library.empty()) return nullptr;
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) usage_error(std::string("cannot load ") + dlerror());
    auto* lookup = reinterpret_cast<GgmlLookup>(dlsym(handle, "tensorfs_bench_ggml_to_float"));
    if (lookup == nullptr) usage_error(library + " has no tensorfs_bench_ggml_to_float");
    return lookup;
}

std::string cpu_model() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    }
    return "unknown CPU";
}

// The fast paths this CPU runs, narrowest first.
std::vector<KernelPath> fast_paths() {
    std::vector<KernelPath> paths;
    for (const KernelPath path : {KernelPath::avx2, KernelPath::avx512}) {
        if (path <= cpu_kernel_path()) paths.push_back(path);
    }
    return paths;
}

DequantKernel own_kernel(const TypeTraits& type, KernelPath path) {
    return path == KernelPath::avx512 ? type.avx512 : type.avx2;
}

// This thread's CPU time in seconds. The machine is shared: wall time would count the moments other processes
// hold the core, while CPU time counts only the kernel running (memory stalls included).
double thread_seconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

template <typename Work>
double seconds_of(Work&& work) {
    const double start = thread_seconds();
    work();
    return thread_seconds() - start;
}

// Best GB/s of each measurement; 0 where there is nothing to measure.
struct Row {
    double ggml = 0, portable = 0, memcpy = 0;
    double fast[2] = {0, 0};  // per fast_paths() entry
    std::string same_as_ggml = "-";
};

// Counts the values of `count` that differ in their bits, any NaN matching any NaN.
std::size_t differences(const float* a, const float* b, std::size_t count) {
    std::size_t differing = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const bool same = std::bit_cast<std::uint32_t>(a[i]) == std::bit_cast<std::uint32_t>(b[i]) ||
                          (std::isnan(a[i]) && std::isnan(b[i]));
        differing += !same;
    }
    return differing;
}

// `count` floats starting on a cache line, as the read path's chunk buffers do (a large malloc starts 16 bytes past a
// page boundary, which would split every 64-byte store), written once so that no page fault is timed.
class OutputBuffer {
public:
    explicit OutputBuffer(std::size_t count) : storage_(count + kLineFloats, 1.0f) {
        const auto address = reinterpret_cast<std::uintptr_t>(storage_.data());
        data_ = storage_.data() + (kLineFloats - address / sizeof(float) % kLineFloats) % kLineFloats;
    }
    float* data() { return data_; }

private:
    static constexpr std::size_t kLineFloats = 64 / sizeof(float);
    std::vector<float> storage_;
    float* data_;
};

Row measure(const TypeTraits& type, GgmlToFloat ggml, const Options& options, const std::vector<char>& copy_source) {
    const auto nblocks = static_cast<std::size_t>(options.output_mb * 1e6) / (std::size_t{4} * type.block_elements);
    const std::size_t elements = nblocks * type.block_elements;
    const std::size_t output_bytes = elements * 4;
    const auto stored = test::random_blocks(type, nblocks, 42, test::Scales::finite);
    OutputBuffer output(elements);
    const auto paths = fast_paths();

    auto gb_per_s = [&](double seconds) { return static_cast<double>(output_bytes) / seconds / 1e9; };
    auto best_of = [&](double& best, auto&& work) { best = std::max(best, gb_per_s(seconds_of(work))); };
    Row row;
    for (int r = 0; r < options.reps; ++r) {
        best_of(row.memcpy, [&] { std::memcpy(output.data(), copy_source.data(), output_bytes); });
        if (ggml != nullptr) {
            best_of(row.ggml, [&] { ggml(stored.data(), output.data(), static_cast<std::int64_t>(elements)); });
        }
        best_of(row.portable, [&] { type.portable(stored.data(), nblocks, output.data()); });
        for (std::size_t p = 0; p < paths.size(); ++p) {
            if (const DequantKernel kernel = own_kernel(type, paths[p])) {
                best_of(row.fast[p], [&] { kernel(stored.data(), nblocks, output.data()); });
            }
        }
    }
    if (ggml != nullptr) {
        std::vector<float> ours(elements);
        active_kernel(type)(stored.data(), nblocks, ours.data());
        ggml(stored.data(), output.data(), static_cast<std::int64_t>(elements));
        const std::size_t differing = differences(output.data(), ours.data(), elements);
        row.same_as_ggml = differing == 0 ? "yes" : std::to_string(differing) + " differ";
    }
    return row;
}

// The ggml types with a kernel in id order, then the safetensors dtypes with kernels of their own.
std::vector<const TypeTraits*> types_to_measure(const Options& options) {
    std::vector<const TypeTraits*> all;
    for (std::uint32_t id = 0; id < 256; ++id) {
        const TypeTraits* type = ggml_type_by_id(id);
        if (type != nullptr && type->has_dequant()) all.push_back(type);
    }
    for (const char* name :
         {"F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2"}) {
        all.push_back(safetensors_dtype_by_name(name));
    }
    if (options.types.empty()) return all;
    std::vector<const TypeTraits*> chosen;
    for (const std::string& wanted : options.types) {
        const auto found = std::find_if(all.begin(), all.end(), [&](const TypeTraits* t) { return t->name == wanted; });
        if (found == all.end()) usage_error("no type with a kernel is called " + wanted);
        chosen.push_back(*found);
    }
    return chosen;
}

std::string figure(double gb_per_s) {
    if (gb_per_s <= 0) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", gb_per_s);
    return text;
}

std::string ratio(double a, double b) { return a > 0 && b > 0 ? figure(a / b) : "-"; }

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse_options(argc, argv);
    const GgmlLookup ggml = load_ggml(options.ggml_library);
    const auto types = types_to_measure(options);
    const auto paths = fast_paths();
    std::vector<char> copy_source(static_cast<std::size_t>(options.output_mb * 1e6), 1);

    std::printf("CPU: %s; kernel paths here: portable", cpu_model().c_str());
    for (const KernelPath path : paths) std::printf(", %s", std::string(kernel_path_name(path)).c_str());
    std::printf(" (active: %s); output %.0f MB per run; best of %d; GB/s of float32 output per second of CPU time, "
                "one thread\n\n",
                std::string(kernel_path_name(active_kernel_path())).c_str(), options.output_mb, options.reps);

    std::string header = "| type | ggml native | portable |", rule = "|---|---:|---:|";
    for (const KernelPath path : paths) {
        header += " " + std::string(kernel_path_name(path)) + " |";
        rule += "---:|";
    }
    header += " memcpy | fast / ggml | fast / memcpy |";
    rule += "---:|---:|---:|";
    if (paths.size() == 2) {
        header += " avx512 / avx2 |";
        rule += "---:|";
    }
    header += " same floats as ggml |";
    rule += "---|";
    std::printf("%s\n%s\n", header.c_str(), rule.c_str());

    for (const TypeTraits* type : types) {
        const GgmlToFloat to_float = ggml != nullptr && type->ggml_id >= 0 ? ggml(type->ggml_id) : nullptr;
        const Row row = measure(*type, to_float, options, copy_source);
        // "fast": the path this process runs, or portable where the type has no fast kernel.
        double fast = row.portable;
        for (std::size_t p = 0; p < paths.size(); ++p) {
            if (paths[p] <= active_kernel_path() && row.fast[p] > 0) fast = row.fast[p];
        }
        std::string line = "| " + std::string(type->name) + (type->ggml_id < 0 ? " (safetensors)" : "") + " | " +
                           figure(row.ggml) + " | " + figure(row.portable) + " |";
        for (std::size_t p = 0; p < paths.size(); ++p) line += " " + figure(row.fast[p]) + " |";
        line += " " + figure(row.memcpy) + " | " + ratio(fast, row.ggml) + " | " + ratio(fast, row.memcpy) + " |";
        if (paths.size() == 2) line += " " + ratio(row.fast[1], row.fast[0]) + " |";
        line += " " + row.same_as_ggml + " |";
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
    }
    return 0;
}
