// tensorfs: mount a model checkpoint as a tree of plain files. See `tensorfs --help`.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "commands.hpp"

namespace tensorfs::cli {
namespace {

constexpr const char* kUsage =
    "usage: tensorfs mount SOURCE MOUNTPOINT [-f] [-d] [-s] [-o OPT[,OPT...]] [--cache-size SIZE] [--threads N]\n"
    "       tensorfs SOURCE MOUNTPOINT [-o OPT...]\n"
    "       tensorfs umount MOUNTPOINT\n"
    "       tensorfs validate SOURCE\n"
    "       tensorfs --help | --version\n"
    "\n"
    "SOURCE is a .safetensors file, a .safetensors.index.json, a .gguf file (or any part of a split set), or a\n"
    "folder holding one of those. Every tensor becomes a folder with raw, meta.json, dequant.f32, dequant.npy.\n"
    "\n"
    "mount options:\n"
    "  -f                 stay in the foreground\n"
    "  -d                 debug: print every FUSE request (implies -f)\n"
    "  -s                 serve requests on one thread\n"
    "  -o OPT[,OPT...]    libfuse mount options (allow_other, ...) and tensorfs's own:\n"
    "                       cache_size=SIZE   decoded chunks kept in memory (K, M, G suffixes)\n"
    "                       threads=N         FUSE worker threads\n"
    "  --cache-size SIZE  same as -o cache_size=SIZE\n"
    "  --threads N        same as -o threads=N\n";

}  // namespace

int usage_error(const std::string& message) {
    std::fprintf(stderr, "tensorfs: %s\nTry 'tensorfs --help'.\n", message.c_str());
    return 1;
}

}  // namespace tensorfs::cli

int main(int argc, char** argv) {
    using namespace tensorfs::cli;
    const Arguments all(argv + 1, argv + argc);
    if (all.empty()) return usage_error("missing command");
    const std::string& first = all.front();
    const Arguments rest(all.begin() + 1, all.end());
    try {
        if (first == "--help" || first == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (first == "--version" || first == "-V") {
            std::printf("tensorfs %s\n", TENSORFS_VERSION);
            return 0;
        }
        if (first == "mount") return mount_command(rest);
        if (first == "umount" || first == "unmount") return umount_command(rest);
        if (first == "validate") return validate_command(rest);
        // `tensorfs SOURCE MOUNTPOINT [-o ...]`, the form mount(8) and fstab use.
        return mount_command(all);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "tensorfs: %s\n", error.what());
        return 1;
    }
}
