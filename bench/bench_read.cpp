// The timed loops of scripts/bench, in C++ so that the figures measure the file system, not an interpreter.
// Each mode prints one JSON line: {"bytes": N, "seconds": S}.
//
//   bench_read seq FILE [OFFSET LENGTH]            pread() 1 MiB at a time over [OFFSET, OFFSET+LENGTH)
//   bench_read random FILE OFFSET LENGTH COUNT     COUNT pread()s of 4 KiB at random 4 KiB-aligned offsets of
//                                                  the range (same offsets for the same range and count)
//   bench_read decode SOURCE TENSOR                decodes the tensor in-process on one thread, 1 MiB of float32
//                                                  at a time (pread of its blocks + kernel), as the daemon would
//   bench_read export-header SOURCE DTYPE          lays out model.safetensors (ModelExport: its whole header) for
//                                                  export_dtype DTYPE; "bytes" is the header's size, and
//                                                  "parse_seconds" the time open_catalog took to read the source
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/model_export.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/source_files.hpp"

using namespace tensorfs;

namespace {

using Clock = std::chrono::steady_clock;

int usage() {
    std::fprintf(stderr,
                 "usage: bench_read seq FILE [OFFSET LENGTH] | random FILE OFFSET LENGTH COUNT | decode SOURCE TENSOR"
                 " | export-header SOURCE DTYPE\n");
    return 2;
}

void print(std::uint64_t bytes, Clock::duration elapsed) {
    std::printf("{\"bytes\": %llu, \"seconds\": %.6f}\n", static_cast<unsigned long long>(bytes),
                std::chrono::duration<double>(elapsed).count());
}

int open_or_die(const char* path) {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        std::perror(path);
        std::exit(1);
    }
    return fd;
}

void pread_or_die(int fd, char* buffer, std::size_t length, std::uint64_t offset) {
    while (length > 0) {
        const ssize_t got = ::pread(fd, buffer, length, static_cast<off_t>(offset));
        if (got <= 0) {
            std::perror("pread");
            std::exit(1);
        }
        buffer += got;
        length -= static_cast<std::size_t>(got);
        offset += static_cast<std::uint64_t>(got);
    }
}

int sequential(const char* path, std::uint64_t offset, std::uint64_t length) {
    const int fd = open_or_die(path);
    if (length == 0) {
        struct stat st {};
        ::fstat(fd, &st);
        length = static_cast<std::uint64_t>(st.st_size) - offset;
    }
    std::vector<char> buffer(1 << 20);
    const auto started = Clock::now();
    for (std::uint64_t done = 0; done < length;) {
        const std::size_t step = std::min<std::uint64_t>(buffer.size(), length - done);
        pread_or_die(fd, buffer.data(), step, offset + done);
        done += step;
    }
    print(length, Clock::now() - started);
    ::close(fd);
    return 0;
}

int random_reads(const char* path, std::uint64_t offset, std::uint64_t length, std::uint64_t count) {
    constexpr std::size_t kRead = 4096;
    const int fd = open_or_die(path);
    std::mt19937_64 rng(42);
    std::vector<std::uint64_t> offsets(count);
    for (auto& at : offsets) at = offset + rng() % (length / kRead) * kRead;
    std::vector<char> buffer(kRead);
    const auto started = Clock::now();
    for (const std::uint64_t at : offsets) pread_or_die(fd, buffer.data(), kRead, at);
    print(count * kRead, Clock::now() - started);
    ::close(fd);
    return 0;
}

int decode(const char* source, const std::string& name) {
    const Catalog catalog = open_catalog(source);
    const SourceFiles files(catalog);
    for (const Tensor& tensor : catalog.tensors) {
        if (tensor.name != name) continue;
        const TypeTraits& type = *tensor.type;
        const std::uint64_t blocks_per_chunk = std::max<std::uint64_t>(1, (1 << 20) / 4 / type.block_elements);
        std::vector<std::uint8_t> stored(blocks_per_chunk * type.block_bytes);
        std::vector<float> values(blocks_per_chunk * type.block_elements, 0.0f);
        const DequantKernel kernel = active_kernel(type);
        const auto started = Clock::now();
        for (std::uint64_t block = 0; block < tensor.blocks(); block += blocks_per_chunk) {
            const std::uint64_t blocks = std::min(blocks_per_chunk, tensor.blocks() - block);
            files.read_exact(tensor.file, tensor.offset + block * type.block_bytes, blocks * type.block_bytes,
                             stored.data());
            kernel(stored.data(), blocks, values.data());
        }
        print(tensor.f32_bytes(), Clock::now() - started);
        return 0;
    }
    std::fprintf(stderr, "no tensor %s\n", name.c_str());
    return 1;
}

int export_header(const char* source, const char* dtype_name) {
    const auto dtype = export_dtype_named(dtype_name);
    if (!dtype) return usage();
    const auto parse_started = Clock::now();
    const Catalog catalog = open_catalog(source);
    const auto started = Clock::now();
    const ModelExport model_export(catalog, *dtype);
    const auto elapsed = Clock::now() - started;
    if (!model_export.available()) {
        std::fprintf(stderr, "%s\n", model_export.error().c_str());
        return 1;
    }
    std::printf("{\"bytes\": %zu, \"seconds\": %.6f, \"parse_seconds\": %.6f, \"tensors\": %zu}\n",
                model_export.header().size(), std::chrono::duration<double>(elapsed).count(),
                std::chrono::duration<double>(started - parse_started).count(), model_export.parts().size());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) return usage();
    const std::string mode = argv[1];
    auto number = [&](int i) { return std::strtoull(argv[i], nullptr, 10); };
    if (mode == "seq" && argc == 3) return sequential(argv[2], 0, 0);
    if (mode == "seq" && argc == 5) return sequential(argv[2], number(3), number(4));
    if (mode == "random" && argc == 6) return random_reads(argv[2], number(3), number(4), number(5));
    if (mode == "decode" && argc == 4) return decode(argv[2], argv[3]);
    if (mode == "export-header" && argc == 4) return export_header(argv[2], argv[3]);
    return usage();
}
