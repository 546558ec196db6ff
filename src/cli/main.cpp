// tensorfs: mount a model checkpoint as a tree of plain files. See `tensorfs --help` and tensorfs(1).
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "command_help.hpp"
#include "commands.hpp"
#include "hidden_secrets.hpp"
#include "option_help.hpp"
#include "fuse/libfuse.hpp"
#include "tensorfs/suggestions.hpp"
#include "remote/http_client.hpp"
#include "tensorfs/dtype.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/remote_source.hpp"

namespace tensorfs::cli {
namespace {

// The help is made of these parts: `tensorfs --help` prints them all, `tensorfs help mount` mount's own.
constexpr const char* kMountUsage =
    "usage: tensorfs mount SOURCE MOUNTPOINT [-f] [-d] [-s] [-o OPT[,OPT...]] [--cache-size SIZE] [--threads N]\n"
    "                      [--model PATH] [--cache-dir DIR] [--disk-cache-size SIZE] [--timeout SECONDS]\n"
    "       tensorfs SOURCE MOUNTPOINT [-o OPT[,OPT...]]     (the form mount(8) and fstab use)\n";

constexpr const char* kOtherUsage =
    "       tensorfs umount MOUNTPOINT\n"
    "       tensorfs ls SOURCE [--json] [--model PATH] [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE]\n"
    "       tensorfs ls --files SOURCE [--json] [--model PATH] [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE]\n"
    "       tensorfs info SOURCE [--json] [--model PATH] [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE]\n"
    "       tensorfs cat SOURCE TENSOR [--raw | --f32 | --npy | --bf16 | --f16] [--model PATH] [--cache-dir DIR]\n"
    "                         [-o OPT] [--disk-cache-size SIZE]\n"
    "       tensorfs convert SOURCE OUT.safetensors [--dtype keep|bf16|f16|f32] [--force] [--model PATH]\n"
    "                        [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE]\n"
    "       tensorfs validate SOURCE [--json] [--model PATH] [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE]\n"
    "       tensorfs stats MOUNTPOINT [--json | --prometheus]\n"
    "       tensorfs diff A B [--tensors GLOB] [--names same|gguf|auto] [--json | --csv] [--quiet] [--model PATH]\n"
    "                     [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE]\n"
    "       tensorfs status [--json]\n"
    "       tensorfs cache [--cache-dir DIR] ls | du | prune [--older-than DURATION] [--max-size SIZE] | clear\n"
    "       tensorfs help [COMMAND]\n"
    "       tensorfs prefetch SOURCE [--tensors GLOB] [--files GLOB] [--quiet] [--verify] [-o OPT] [--model PATH]\n"
    "                         [--cache-dir DIR] [--disk-cache-size SIZE]\n"
    "       tensorfs csi --endpoint unix:///PATH/csi.sock --node-id NAME [--state-dir DIR] [--cache-dir DIR]\n"
    "       tensorfs --help | --version\n"
    "(every command that reads a SOURCE also takes --timeout SECONDS)\n";

constexpr const char* kDescription =
    "\n"
    "SOURCE is a .safetensors file, a .safetensors.index.json, a .gguf file (or any part of a split set), a PyTorch\n"
    "checkpoint (.bin, .pt, .pth; its pickle is never run), a .bin.index.json, or a folder holding one of those; or\n"
    "such a file at an http(s):// URL, or hf://ORG/REPO[@REVISION][/PATH] on the Hugging Face Hub (token: $HF_TOKEN),\n"
    "or s3://BUCKET/KEY or s3://BUCKET/PREFIX/ in an S3 store (keys, region and endpoint as the AWS CLI reads them:\n"
    "AWS_* variables, ~/.aws/credentials, ~/.aws/config), read by range requests through a disk cache. Every tensor\n"
    "becomes a folder with raw, meta.json, dequant.f32, dequant.npy, dequant.bf16 and dequant.f16; the root also\n"
    "holds model.json and model.safetensors, the whole model as one safetensors file.\n"
    "The root is a model folder too: the source folder's other top-level files (config.json, tokenizer files...)\n"
    "are there as they are, and source/ holds the source's own files, byte for byte.\n"
    "\n"
    "commands:\n"
    "  mount     mount SOURCE read-only at MOUNTPOINT; returns once the mount is ready\n"
    "  umount    unmount a tensorfs mount\n"
    "  ls        the tensors: name, dtype, shape, stored size (--json: their meta.json documents);\n"
    "            --files: the side files (config.json, tokenizer...) and source/ files a mount shows\n"
    "  info      format, files, tensor and parameter counts, size, bits per weight, dtypes, metadata\n"
    "            (--json: model.json plus parameter_count, bits_per_weight, dtypes)\n"
    "  cat       one tensor to stdout (not to a terminal): --f32 its dequant.f32 (the default), --npy its\n"
    "            dequant.npy, --bf16/--f16 its dequant.bf16/.f16, --raw its stored bytes; TENSOR is the tensor's\n"
    "            name or its folder's name\n"
    "  convert   write the bytes a mount shows as model.safetensors to OUT.safetensors (--dtype: as\n"
    "            -o export_dtype=); a progress line on a terminal; OUT appears only when complete\n"
    "  validate  check every header rule; one line per problem\n"
    "  stats     the live counters of a mount (--json: .tensorfs/stats.json as it is; --prometheus:\n"
    "            .tensorfs/metrics, Prometheus' text format, for node_exporter's textfile collector)\n"
    "  diff      error metrics of B against A, tensor by tensor: differing values, max |a-b|, RMSE, relative\n"
    "            RMSE, cosine, SNR; --names gguf pairs Hugging Face names with a GGUF's (auto: when one side\n"
    "            is GGUF); --json: JSON Lines, --csv: CSV; exit 0 equal, 1 different, 2 trouble\n"
    "  status    every tensorfs mount of the machine: source, daemon pid and uptime, bytes served and fetched,\n"
    "            disk-cache hits, read errors; a mount whose daemon died, with the command that clears it\n"
    "  cache     the disk cache of remote sources: ls, du, prune (least recently read first), clear\n"
    "  help      one command's own usage (also: tensorfs COMMAND --help)\n"
    "  prefetch  fill the disk cache with SOURCE's weight files (--tensors: the tensors whose names match,\n"
    "            --files: the files of source/ and the side files whose paths match), max_connections requests\n"
    "            in flight; a progress line on a terminal (--quiet: none); the last line gives the bytes fetched\n"
    "            and the rate; --verify: each whole file against the checksum its source publishes (the Hub's\n"
    "            LFS sha256, S3's x-amz-checksum-sha256 or single-part ETag MD5)\n"
    "  csi       the Kubernetes CSI node plugin (driver csi.tensorfs.io): volumes that mount a SOURCE\n"
    "\n";

// What `help mount` says of the command before its options (the whole help's description says more).
constexpr const char* kMountDescription =
    "\n"
    "Mounts SOURCE (see tensorfs --help) read-only at MOUNTPOINT and returns once the mount is ready; the daemon goes\n"
    "to the background unless -f or -d. A folder of several models mounts without tensors; model.json lists them.\n"
    "\n";

constexpr const char* kMountOptionsHead =
    "mount options:\n"
    "  -f                 stay in the foreground\n"
    "  -d, -o debug       debug: print every FUSE request (implies -f)\n"
    "  -s                 serve requests on one thread\n"
    "  -o OPT[,OPT...]    tensorfs's own options, libfuse's (below) and the usual mount(8) ones:\n";

// Between the two: tensorfs_options_help(), tensorfs's own options from the parser's list.
constexpr const char* kMountOptionsTail =
    "                       dev, nodev, suid, nosuid, exec, noexec, atime, noatime, sync, async, dirsync\n"
    "                       ro, rw (the mount is read-only either way), defaults, auto, noauto, user,\n"
    "                       users, nouser, owner, group, nofail, _netdev, x-*, comment=*, relatime,\n"
    "                       strictatime, nodiratime, lazytime: accepted, changing nothing\n"
    "  --cache-size SIZE  same as -o cache_size=SIZE\n"
    "  --threads N        same as -o threads=N\n"
    "  --model PATH, --cache-dir DIR, --disk-cache-size SIZE, --timeout SECONDS   same as -o model=PATH,\n"
    "                     cache_dir=DIR, disk_cache_size=SIZE, timeout=SECONDS; ls, info, cat, convert, validate,\n"
    "                     diff (--model: the same PATH in A and B) and prefetch take them too, and -o with the\n"
    "                     options of remote sources\n"
    "  --secrets-fd N     read credentials from file descriptor N: a JSON object of HF_TOKEN, AWS_ACCESS_KEY_ID,\n"
    "                     AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, username, password (for programs that start\n"
    "                     tensorfs: no command line, environment or file shows them)\n"
    "\n";

constexpr const char* kExitStatus =
    "exit status: 0 success, 1 invalid source or usage, 2 the mount itself failed.\n"
    "\n"
    "libfuse options:\n";

void print_mount_options() {
    std::fputs(kMountOptionsHead, stdout);
    std::fputs(tensorfs_options_help().c_str(), stdout);
    std::fputs(kMountOptionsTail, stdout);
}

void print_help() {
    for (const char* part : {kMountUsage, kOtherUsage, kDescription}) std::fputs(part, stdout);
    print_mount_options();
    std::fputs(kExitStatus, stdout);
    print_libfuse_help();
}

void print_mount_help() {
    for (const char* part : {kMountUsage, kMountDescription}) std::fputs(part, stdout);
    print_mount_options();
    std::fputs(kExitStatus, stdout);
    print_libfuse_help();
}

// `tensorfs help [CMD]`, `tensorfs CMD --help`: that command's own usage, or the whole help. `help --help` is
// help's own.
int help_command(const std::string& asked) {
    const std::string command = asked == "--help" || asked == "-h" ? "help" : asked;
    if (command.empty()) {
        print_help();
        return 0;
    }
    if (!is_command(command)) {
        return usage_error("no command '" + command + "'" + did_you_mean(command, command_names()));
    }
    if (command == "mount") {
        print_mount_help();
    } else {
        std::fputs(command_usage(command).value_or("").c_str(), stdout);
    }
    return 0;
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
    if (first == "help") {
        if (rest.size() > 1) return usage_error("help: unexpected argument '" + rest[1] + "'");
        return help_command(rest.empty() ? std::string() : rest.front());
    }
    if (asks_for_help(all)) return help_command(is_command(first) ? first : std::string());
    // Before the mount(8) form takes it as a mount option: `tensorfs --verison`.
    if (const std::string meant = nearest(first, {"--help", "--version"}); first.starts_with("--") && !meant.empty()) {
        return usage_error("unknown option '" + first + "'; did you mean '" + meant + "'?");
    }
    if (first == "mount") return mount_command(rest);
    if (first == "umount" || first == "unmount") return umount_command(rest);
    if (first == "validate") return validate_command(rest);
    if (first == "ls") return ls_command(rest);
    if (first == "info") return info_command(rest);
    if (first == "cat") return cat_command(rest);
    if (first == "convert") return convert_command(rest);
    if (first == "stats") return stats_command(rest);
    if (first == "diff") return diff_command(rest);
    if (first == "status") return status_command(rest);
    if (first == "cache") return cache_command(rest);
    if (first == "prefetch") return prefetch_command(rest);
    if (first == "csi") return csi_command(rest);
    // `tensorfs SOURCE MOUNTPOINT [-o ...]`, the form mount(8) and fstab use.
    if (!first.starts_with("-") && !path_exists(first) && !is_remote_source(first)) {
        return usage_error("'" + first + "' is neither a command nor an existing SOURCE" +
                           did_you_mean(first, command_names()));
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
        const Arguments arguments(argv + 1, argv + argc);
        // Before the daemon forks (it is this process): the copies above are what the commands read.
        hide_secrets_from_ps(argc, argv);
        return run(arguments);
    } catch (const tensorfs::SourceError& invalid) {
        // Each problem is already a full `tensorfs: FILE: WHAT` line.
        for (const auto& problem : invalid.problems()) std::fprintf(stderr, "%s\n", problem.line().c_str());
        return 1;
    } catch (const std::exception& error) {
        return failure(error.what());
    }
}
