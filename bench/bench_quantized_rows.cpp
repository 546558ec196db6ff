// A quantized weight decoded whole on one thread, as a scheme's values are made for every reader: its rows from its
// parts' bytes in the page cache (pread), through the kernels, into 1 MiB of output at a time written to one
// buffer; in float32 and in bfloat16; beside memcpy of the same output into the same buffer. GB/s of output per
// second of the thread's CPU time, best of 3 rounds. Prints one JSON object.
//
// Usage: bench_quantized_rows SOURCE TENSOR
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/quantized_values.hpp"
#include "tensorfs/source_files.hpp"

using namespace tensorfs;

namespace {

constexpr std::uint64_t kChunkBytes = 1 << 20;

double thread_seconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// GB/s of `bytes` output that `once` writes, best of 3 rounds.
double best_rate(const std::function<void()>& once, std::uint64_t bytes) {
    double best = 0;
    for (int round = 0; round < 3; ++round) {
        const double started = thread_seconds();
        once();
        best = std::max(best, static_cast<double>(bytes) / (thread_seconds() - started) / 1e9);
    }
    return best;
}

// The weight's values in `view`, whole, 1 MiB of output at a time into `buffer`.
void decode(const SourceFiles& files, const Tensor& tensor, ValueView view, std::vector<char>& buffer) {
    const std::uint64_t row = row_elements(tensor), rows = tensor.elements / row;
    const std::uint64_t rows_at_once = std::max<std::uint64_t>(1, kChunkBytes / bytes_per_value(view) / row);
    buffer.resize(rows_at_once * row * bytes_per_value(view));
    for (std::uint64_t first = 0; first < rows; first += rows_at_once) {
        write_quantized_rows(files, tensor, first, std::min(rows_at_once, rows - first), view, buffer.data());
    }
}

// memcpy of `bytes`, 1 MiB at a time, from one buffer into another.
void copy(std::uint64_t bytes, const std::vector<char>& from, std::vector<char>& to) {
    for (std::uint64_t done = 0; done < bytes; done += kChunkBytes) {
        std::memcpy(to.data(), from.data(), std::min(kChunkBytes, bytes - done));
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: bench_quantized_rows SOURCE TENSOR\n");
        return 2;
    }
    const Catalog catalog = open_catalog(argv[1]);
    const SourceFiles files(catalog);
    const auto found = std::find_if(catalog.tensors.begin(), catalog.tensors.end(),
                                    [&](const Tensor& tensor) { return tensor.name == argv[2]; });
    if (found == catalog.tensors.end() || !found->quantization || !found->has_values()) {
        std::fprintf(stderr, "bench_quantized_rows: %s is no quantized weight of %s\n", argv[2], argv[1]);
        return 1;
    }
    std::vector<char> buffer, from(kChunkBytes, 1), to(kChunkBytes, 1);   // written before any timing
    decode(files, *found, ValueView::F32, buffer);
    std::printf("{\"scheme\": \"%s\", \"bytes_f32\": %llu", std::string(quantized_dtype(*found->quantization)).c_str(),
                static_cast<unsigned long long>(found->f32_bytes()));
    for (const ValueView view : {ValueView::F32, ValueView::BF16}) {
        const std::uint64_t bytes = found->elements * bytes_per_value(view);
        const double decoded = best_rate([&] { decode(files, *found, view, buffer); }, bytes);
        const double copied = best_rate([&] { copy(bytes, from, to); }, bytes);
        const char* name = view == ValueView::F32 ? "f32" : "bf16";
        std::printf(", \"%s_gbs\": %.3f, \"memcpy_%s_gbs\": %.3f", name, decoded, name, copied);
    }
    std::printf("}\n");
    return 0;
}
