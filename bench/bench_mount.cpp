// Where the time of a mount goes, stage by stage, in-process and without FUSE: what `tensorfs mount` does before
// it answers the kernel. scripts/bench prints these next to the wall time of the real mount.
//
//   bench_mount SOURCE     one JSON line: seconds per stage, the tensor count and the RSS after each stage
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "tensorfs/catalog.hpp"
#include "tensorfs/content.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/source_files.hpp"
#include "tensorfs/stats.hpp"
#include "tensorfs/tree.hpp"

using namespace tensorfs;

namespace {

using Clock = std::chrono::steady_clock;

// Resident bytes of this process (VmRSS).
unsigned long long resident_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    }
    return 0;
}

class Stages {
public:
    template <typename Step>
    void run(const char* name, Step&& step) {
        const auto started = Clock::now();
        step();
        const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
        json_ += (json_.empty() ? "" : ", ") + std::string("\"") + name + "\": " + std::to_string(seconds);
        json_ += std::string(", \"") + name + "_rss\": " + std::to_string(resident_bytes());
    }
    void add(const char* name, unsigned long long value) {
        json_ += std::string(", \"") + name + "\": " + std::to_string(value);
    }
    void print() const { std::printf("{%s}\n", json_.c_str()); }

private:
    std::string json_;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: bench_mount SOURCE\n");
        return 2;
    }
    Stages stages;
    std::unique_ptr<Catalog> catalog;
    std::unique_ptr<Tree> tree;
    std::unique_ptr<SourceFiles> files;
    std::unique_ptr<Content> content;
    Stats stats;
    stages.run("catalog", [&] { catalog = std::make_unique<Catalog>(open_catalog(argv[1])); });
    stages.run("tree", [&] { tree = std::make_unique<Tree>(*catalog); });
    stages.run("files", [&] { files = std::make_unique<SourceFiles>(*catalog); });
    stages.run("content", [&] { content = std::make_unique<Content>(*catalog, *tree, *files, stats); });
    // What the first walk asks of the daemon beside the tree: every meta.json's size.
    std::uint64_t meta_bytes = 0;
    stages.run("meta_sizes", [&] {
        for (std::uint32_t i = 0; i < tree->tensor_count(); ++i) {
            meta_bytes += content->size(Node{NodeKind::MetaJson, i});
        }
    });
    stages.run("trim", [] { ::malloc_trim(0); });
    stages.add("tensors", catalog->tensors.size());
    stages.add("meta_bytes", meta_bytes);
    stages.print();
    return 0;
}
