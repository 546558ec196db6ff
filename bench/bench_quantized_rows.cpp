// A quantized weight decoded whole on one thread, as a scheme's values are made for every reader (the engine's
// write_quantized_rows: its parts' bytes gathered, the kernels, the transposes), with the source file's bytes in
// this process's memory, so that what is timed is the decoding and not the reads' system calls; into the rows a
// reader writes at a time (rows_at_once), in float32 and in bfloat16, into one buffer; beside memcpy of the same
// output into the same buffer. GB/s of output per second of the thread's CPU time, best of 3 rounds. Prints one
// JSON object.
//
// Usage: bench_quantized_rows SOURCE TENSOR
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/quantized_values.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/source_object.hpp"

using namespace tensorfs;

namespace {

// A file of the source, its bytes copied into memory.
class FileInMemory final : public SourceObject {
public:
    explicit FileInMemory(const SourceObject& file)
        : SourceObject(file.name(), file.size(), file.modified()), bytes_(file.size()) {
        file.read(0, bytes_.size(), bytes_.data());
    }
    void read(std::uint64_t offset, std::size_t length, void* dst) const override {
        std::memcpy(dst, bytes_.data() + offset, length);
    }

private:
    std::vector<char> bytes_;
};

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

// The weight's values in `view`, whole, rows_at_once rows at a time into `buffer`.
void decode(const SourceFiles& files, const Tensor& tensor, ValueView view, std::vector<char>& buffer) {
    const std::uint64_t row = row_elements(tensor), rows = tensor.elements / row;
    const std::uint64_t at_once = rows_at_once(tensor, view);
    for (std::uint64_t first = 0; first < rows; first += at_once) {
        write_quantized_rows(files, tensor, first, std::min(at_once, rows - first), view, buffer.data());
    }
}

// memcpy of `bytes`, `piece` bytes at a time, from one buffer into another.
void copy(std::uint64_t bytes, std::uint64_t piece, const std::vector<char>& from, std::vector<char>& to) {
    for (std::uint64_t done = 0; done < bytes; done += piece) {
        std::memcpy(to.data(), from.data(), std::min(piece, bytes - done));
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: bench_quantized_rows SOURCE TENSOR\n");
        return 2;
    }
    Catalog catalog = open_catalog(argv[1]);
    for (SourceFile& file : catalog.files) file.object = std::make_shared<FileInMemory>(*file.object);
    const SourceFiles files(catalog);
    const auto found = std::find_if(catalog.tensors.begin(), catalog.tensors.end(),
                                    [&](const Tensor& tensor) { return tensor.name == argv[2]; });
    if (found == catalog.tensors.end() || !found->quantization || !found->has_values()) {
        std::fprintf(stderr, "bench_quantized_rows: %s is no quantized weight of %s\n", argv[2], argv[1]);
        return 1;
    }
    // Written before any timing: no first touch of new memory is timed.
    const std::uint64_t piece = rows_at_once(*found, ValueView::F32) * row_elements(*found) * 4;
    std::vector<char> buffer(piece, 1), from(piece, 1), to(piece, 1);
    decode(files, *found, ValueView::F32, buffer);
    std::printf("{\"scheme\": \"%s\", \"bytes_f32\": %llu", std::string(quantized_dtype(*found->quantization)).c_str(),
                static_cast<unsigned long long>(found->f32_bytes()));
    for (const ValueView view : {ValueView::F32, ValueView::BF16}) {
        const std::uint64_t bytes = found->elements * bytes_per_value(view);
        const double decoded = best_rate([&] { decode(files, *found, view, buffer); }, bytes);
        const std::uint64_t view_piece = rows_at_once(*found, view) * row_elements(*found) * bytes_per_value(view);
        const double copied = best_rate([&] { copy(bytes, view_piece, from, to); }, bytes);
        const char* name = view == ValueView::F32 ? "f32" : "bf16";
        std::printf(", \"%s_gbs\": %.3f, \"memcpy_%s_gbs\": %.3f", name, decoded, name, copied);
    }
    std::printf("}\n");
    return 0;
}
