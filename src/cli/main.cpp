// tensorfs: mount a model checkpoint as a tree of plain files. See `tensorfs --help` and tensorfs(1).
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "commands.hpp"
#include "libfuse.hpp"
#include "remote/http_client.hpp"
#include "tensorfs/dtype.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/remote_source.hpp"

namespace tensorfs::cli {
namespace {

constexpr const char* kUsage =
    "usage: tensorfs mount SOURCE MOUNTPOINT [-f] [-d] [-s] [-o OPT[,OPT...]] [--cache-size SIZE] [--threads N]\n"
    "                      [--cache-dir DIR] [--disk-cache-size SIZE]\n"
    "       tensorfs SOURCE MOUNTPOINT [-o OPT[,OPT...]]     (the form mount(8) and fstab use)\n"
    "       tensorfs umount MOUNTPOINT\n"
    "       tensorfs ls SOURCE [--json] [--cache-dir DIR]\n"
    "       tensorfs info SOURCE [--json] [--cache-dir DIR]\n"
    "       tensorfs cat SOURCE TENSOR [--raw | --f32 | --npy] [--cache-dir DIR]\n"
    "       tensorfs convert SOURCE OUT.safetensors [--dtype keep|bf16|f16|f32] [--cache-dir DIR]\n"
    "       tensorfs validate SOURCE [--cache-dir DIR]\n"
    "       tensorfs stats MOUNTPOINT [--json | --prometheus]\n"
    "       tensorfs prefetch SOURCE [--tensors GLOB] [--files GLOB] [--quiet] [--verify] [-o OPT]\n"
    "                         [--cache-dir DIR] [--disk-cache-size SIZE]\n"
    "       tensorfs --help | --version\n"
    "\n"
    "SOURCE is a .safetensors file, a .safetensors.index.json, a .gguf file (or any part of a split set), a PyTorch\n"
    "checkpoint (.bin, .pt, .pth; its pickle is never run), a .bin.index.json, or a folder holding one of those; or\n"
    "such a file at an http(s):// URL, or hf://ORG/REPO[@REVISION][/PATH] on the Hugging Face Hub (token: $HF_TOKEN),\n"
    "or s3://BUCKET/KEY or s3://BUCKET/PREFIX/ in an S3 store (keys, region and endpoint as the AWS CLI reads them:\n"
    "AWS_* variables, ~/.aws/credentials, ~/.aws/config), read by range requests through a disk cache. Every tensor\n"
    "becomes a folder with raw, meta.json, dequant.f32, dequant.npy, dequant.bf16 and dequant.f16; the root also\n"
    "holds model.json and model.safetensors, the whole model as one safetensors file.\n"
    "\n"
    "commands:\n"
    "  mount     mount SOURCE read-only at MOUNTPOINT; returns once the mount is ready\n"
    "  umount    unmount a tensorfs mount\n"
    "  ls        the tensors: name, dtype, shape, stored size (--json: their meta.json documents)\n"
    "  info      format, files, tensor and parameter counts, size, bits per weight, dtypes, metadata\n"
    "            (--json: model.json plus parameter_count, bits_per_weight, dtypes)\n"
    "  cat       one tensor to stdout (not to a terminal): --f32 its dequant.f32 (the default), --npy its\n"
    "            dequant.npy, --raw its stored bytes; TENSOR is the tensor's name or its folder's name\n"
    "  convert   write the bytes a mount shows as model.safetensors to OUT.safetensors (--dtype: as\n"
    "            -o export_dtype=); a progress line on a terminal; OUT appears only when complete\n"
    "  validate  check every header rule; one line per problem\n"
    "  stats     the live counters of a mount (--json: .tensorfs/stats.json as it is; --prometheus:\n"
    "            .tensorfs/metrics, Prometheus' text format, for node_exporter's textfile collector)\n"
    "  prefetch  fill the disk cache with SOURCE's weight files (--tensors: the tensors whose names match,\n"
    "            --files: the weight files whose paths match), max_connections requests in flight; a progress\n"
    "            line on a terminal (--quiet: none); the last line gives the bytes fetched and the rate;\n"
    "            --verify: each whole file against the checksum its source publishes (S3: the ETag's MD5)\n"
    "\n"
    "mount options:\n"
    "  -f                 stay in the foreground\n"
    "  -d                 debug: print every FUSE request (implies -f)\n"
    "  -s                 serve requests on one thread\n"
    "  -o OPT[,OPT...]    tensorfs's own options, libfuse's (below) and the usual mount(8) ones:\n"
    "                       cache_size=SIZE   decoded chunks kept in memory (K, M, G, T suffixes)\n"
    "                       threads=N         threads serving reads (1 to 1024)\n"
    "                       export_dtype=D    model.safetensors: keep (every dtype safetensors has; ggml\n"
    "                                         quants as F32, the default), or bf16, f16, f32 for every\n"
    "                                         floating tensor (integers and bools keep theirs)\n"
    "                       cache_dir=DIR     remote sources' disk cache (default $XDG_CACHE_HOME/tensorfs)\n"
    "                       disk_cache_size=SIZE  the most it holds (default 10G; 0: no disk cache)\n"
    "                       max_connections=N range requests in flight for read-ahead (default 16, at most 64)\n"
    "                       readahead=SIZE    how far ahead of a sequential reader to fetch, at most (default\n"
    "                                         64M, and at most half of cache_size)\n"
    "                       dev, nodev, suid, nosuid, exec, noexec, atime, noatime, sync, async, dirsync\n"
    "                       ro, rw (the mount is read-only either way), defaults, auto, noauto, user,\n"
    "                       users, nouser, owner, group, nofail, _netdev, x-*, comment=*, relatime,\n"
    "                       strictatime, nodiratime, lazytime: accepted, changing nothing\n"
    "  --cache-size SIZE  same as -o cache_size=SIZE\n"
    "  --threads N        same as -o threads=N\n"
    "  --cache-dir DIR, --disk-cache-size SIZE   same as -o cache_dir=DIR, disk_cache_size=SIZE; ls, info, cat,\n"
    "                     convert and validate take them too\n"
    "\n"
    "exit status: 0 success, 1 invalid source or usage, 2 the mount itself failed.\n"
    "\n"
    "libfuse options:\n";

void print_help() {
    std::fputs(kUsage, stdout);
    print_libfuse_help();
}

bool asks_for_help(const Arguments& args) {
    return std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
}

// The last line of `--version`: the dequant kernels this process runs (see dtype.hpp), and the CPU's best when
// TENSORFS_KERNELS chose a lower path.
void print_kernel_path() {
    const std::string active(kernel_path_name(active_kernel_path()));
    if (active_kernel_path() == cpu_kernel_path()) {
        std::printf("dequant kernels: %s\n", active.c_str());
    } else {
        std::printf("dequant kernels: %s (TENSORFS_KERNELS; this CPU runs %s)\n", active.c_str(),
                    std::string(kernel_path_name(cpu_kernel_path())).c_str());
    }
}

bool path_exists(const std::string& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0;
}

int run(const Arguments& all) {
    if (all.empty()) return usage_error("missing command");
    const std::string& first = all.front();
    const Arguments rest(all.begin() + 1, all.end());
    if (first == "--version" || first == "-V") {
        print_versions();
        print_kernel_path();
        return 0;
    }
    if (asks_for_help(all)) {
        print_help();
        return 0;
    }
    if (first == "mount") return mount_command(rest);
    if (first == "umount" || first == "unmount") return umount_command(rest);
    if (first == "validate") return validate_command(rest);
    if (first == "ls") return ls_command(rest);
    if (first == "info") return info_command(rest);
    if (first == "cat") return cat_command(rest);
    if (first == "convert") return convert_command(rest);
    if (first == "stats") return stats_command(rest);
    if (first == "prefetch") return prefetch_command(rest);
    // `tensorfs SOURCE MOUNTPOINT [-o ...]`, the form mount(8) and fstab use.
    if (!first.starts_with("-") && !path_exists(first) && !is_remote_source(first)) {
        return usage_error("'" + first + "' is neither a command nor an existing SOURCE");
    }
    return mount_command(all);
}

}  // namespace

}  // namespace tensorfs::cli

int main(int argc, char** argv) {
    using namespace tensorfs::cli;
    // Before any thread starts (libcurl's global setup is not safe to race with one).
    tensorfs::remote::init_http();
    try {
        return run(Arguments(argv + 1, argv + argc));
    } catch (const tensorfs::InvalidSource& invalid) {
        // Each problem is already a full `tensorfs: FILE: WHAT` line.
        for (const auto& problem : invalid.problems()) std::fprintf(stderr, "%s\n", problem.line().c_str());
        return 1;
    } catch (const std::exception& error) {
        return failure(error.what());
    }
}
