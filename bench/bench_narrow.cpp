// float32 -> bfloat16 / float16 throughput of every conversion variant this CPU runs (tensorfs/f32_to_16.hpp), in
// GB/s of float32 input, one thread, best of many repetitions: on 16 K values that stay in the L1 cache (the size
// DequantReader rounds at a time) and on 64 MiB (memory). The AVX-512 bfloat16 row is also timed on values with a
// subnormal in every group of 32, which makes it take its integer rounding instead of vcvtne2ps2bf16.
//
// Usage: bench_narrow
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tensorfs/f32_to_16.hpp"

using namespace tensorfs;

namespace {

double best_rate(NarrowKernel kernel, const std::vector<float>& input, std::vector<std::uint16_t>& output) {
    const std::size_t repetitions = std::max<std::size_t>(3, (std::size_t{1} << 30) / (input.size() * 4));
    double best = 0;
    for (int round = 0; round < 5; ++round) {
        const auto started = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < repetitions; ++i) kernel(input.data(), input.size(), output.data());
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        best = std::max(best, static_cast<double>(input.size() * 4 * repetitions) / seconds / 1e9);
    }
    return best;
}

}  // namespace

int main() {
    std::mt19937 random(1);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::printf("| variant | values | bf16 GB/s | f16 GB/s |\n|---|---|---:|---:|\n");
    for (const std::size_t count : {std::size_t{16} << 10, std::size_t{16} << 20}) {
        std::vector<float> input(count);
        for (float& value : input) value = normal(random);
        std::vector<std::uint16_t> output(count, 1);   // written once: no page faults timed
        const std::string size = count < (1u << 20) ? "16 K (L1)" : "16 M (64 MiB)";
        for (const NarrowVariant& variant : narrow_variants()) {
            if (!variant.cpu_supports()) continue;
            std::printf("| %s | %s | %.2f | %.2f |\n", std::string(variant.name).c_str(), size.c_str(),
                        best_rate(variant.bf16, input, output), best_rate(variant.f16, input, output));
        }
        const NarrowVariant& widest = narrow_variants().back();
        if (widest.cpu_supports()) {
            std::vector<float> awkward = input;
            for (std::size_t i = 0; i < awkward.size(); i += 32) awkward[i] = 1e-40f;   // a subnormal per group
            std::printf("| %s, a subnormal per 32 values | %s | %.2f | - |\n", std::string(widest.name).c_str(),
                        size.c_str(), best_rate(widest.bf16, awkward, output));
        }
    }
    return 0;
}
