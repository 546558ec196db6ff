// Throughput of the quantized kernels (tensorfs/quantized_kernels.hpp) on every path this CPU runs, in GB/s of
// float32 output per second of the thread's CPU time (as bench_dequant measures), best of 5 rounds, beside memcpy of
// the same output size: on 16 K values (64 KiB of output, which stays in the L2 cache, as a row does) and on 16 M
// values (64 MiB: the trip to memory). Inputs are random with ordinary scales: FP8 blocks of 128, 4-bit integers in
// groups of 128 (8-bit too), GPTQ's 4-bit field at bit 12, AWQ rows, and square transposes (128 x 128 and
// 4096 x 4096).
//
// Usage: bench_quantized
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tensorfs/quantized_kernels.hpp"

using namespace tensorfs;

namespace {

// The inputs of every kernel for rows of `count` values (`side` x `side` for the transpose).
struct Inputs {
    explicit Inputs(std::size_t count) : side(static_cast<std::size_t>(std::sqrt(static_cast<double>(count)))) {
        std::mt19937 random(1);
        std::normal_distribution<float> normal(0.0f, 0.02f);
        const auto fill = [&](auto& values, std::size_t size, auto make) {
            values.resize(size);
            for (auto& value : values) value = make();
        };
        fill(bytes, count, [&] { return static_cast<std::uint8_t>(random()); });
        fill(words, count, [&] { return static_cast<std::uint32_t>(random()); });
        fill(floats, count, [&] { return normal(random); });
        fill(zeros, count, [&] { return static_cast<std::int32_t>(random() % 16); });
        fill(exponents, count / 32 + 1, [&] { return static_cast<std::uint8_t>(115 + random() % 10); });
    }
    std::size_t side;
    std::vector<std::uint8_t> bytes, exponents;
    std::vector<std::uint32_t> words;
    std::vector<float> floats;  // scales, and the transpose's source
    std::vector<std::int32_t> zeros;
};

struct Kernel {
    const char* name;
    std::function<void(const QuantizedKernels&, const Inputs&, std::size_t count, float* out)> run;
};

const Kernel kKernels[] = {
    {"fp8_e4m3_scaled, blocks of 128",
     [](const QuantizedKernels& k, const Inputs& in, std::size_t n, float* out) {
         k.fp8_e4m3_scaled(in.bytes.data(), n, in.floats.data(), 128, out);
     }},
    {"nvfp4_scaled",
     [](const QuantizedKernels& k, const Inputs& in, std::size_t n, float* out) {
         k.nvfp4_scaled(in.bytes.data(), n, in.floats.data(), out);
     }},
    {"mxfp4_scaled",
     [](const QuantizedKernels& k, const Inputs& in, std::size_t n, float* out) {
         k.mxfp4_scaled(in.bytes.data(), n, in.exponents.data(), out);
     }},
    {"packed_along_row, 4 bits, groups of 128",
     [](const QuantizedKernels& k, const Inputs& in, std::size_t n, float* out) {
         k.packed_along_row(in.words.data(), n, 4, in.zeros.data(), in.floats.data(), 128, out);
     }},
    {"packed_along_row, 8 bits, groups of 128",
     [](const QuantizedKernels& k, const Inputs& in, std::size_t n, float* out) {
         k.packed_along_row(in.words.data(), n, 8, in.zeros.data(), in.floats.data(), 128, out);
     }},
    {"field_of_words, 4 bits",
     [](const QuantizedKernels& k, const Inputs& in, std::size_t n, float* out) {
         k.field_of_words(in.words.data(), n, 12, 4, in.zeros.data(), in.floats.data(), out);
     }},
    {"awq_row",
     [](const QuantizedKernels& k, const Inputs& in, std::size_t n, float* out) {
         k.awq_row(in.words.data(), n, in.zeros.data(), in.floats.data(), out);
     }},
    {"transpose",
     [](const QuantizedKernels& k, const Inputs& in, std::size_t, float* out) {
         k.transpose(in.floats.data(), in.side, in.side, out, in.side);
     }},
};

double thread_seconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// GB/s of `count` float32 outputs, best of 5 rounds of about 1 GB each.
double best_rate(const std::function<void()>& once, std::size_t count) {
    const std::size_t repetitions = std::max<std::size_t>(3, (std::size_t{1} << 30) / (count * 4));
    double best = 0;
    for (int round = 0; round < 5; ++round) {
        const double started = thread_seconds();
        for (std::size_t i = 0; i < repetitions; ++i) once();
        const double seconds = thread_seconds() - started;
        best = std::max(best, static_cast<double>(count * 4 * repetitions) / seconds / 1e9);
    }
    return best;
}

}  // namespace

int main() {
    std::printf("| kernel | values |");
    for (const QuantizedKernels& variant : quantized_kernel_variants()) {
        if (variant.cpu_supports()) std::printf(" %s GB/s |", std::string(variant.name).c_str());
    }
    std::printf(" memcpy GB/s |\n|---|---|");
    for (const QuantizedKernels& variant : quantized_kernel_variants()) {
        if (variant.cpu_supports()) std::printf("---:|");
    }
    std::printf("---:|\n");
    for (const std::size_t count : {std::size_t{16} << 10, std::size_t{16} << 20}) {
        const Inputs inputs(count);
        std::vector<float> out(count, 1.0f), copy(count, 1.0f);  // written once: no page faults timed
        const double memcpy_rate =
            best_rate([&] { std::memcpy(copy.data(), inputs.floats.data(), count * sizeof(float)); }, count);
        for (const Kernel& kernel : kKernels) {
            std::printf("| %s | %s |", kernel.name, count < (1u << 20) ? "16 K (64 KiB out)" : "16 M (64 MiB out)");
            for (const QuantizedKernels& variant : quantized_kernel_variants()) {
                if (!variant.cpu_supports()) continue;
                std::printf(" %.2f |", best_rate([&] { kernel.run(variant, inputs, count, out.data()); }, count));
            }
            std::printf(" %.2f |\n", memcpy_rate);
        }
    }
    return 0;
}
