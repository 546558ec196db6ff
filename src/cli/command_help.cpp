#include "command_help.hpp"

namespace tensorfs::cli {
namespace {

struct CommandHelp {
    std::string_view name;
    std::string_view usage;  // empty: the whole `tensorfs --help`
};

constexpr CommandHelp kCommands[] = {
    {"mount", ""},
    {"umount",
     "usage: tensorfs umount MOUNTPOINT\n"
     "\n"
     "Unmounts a tensorfs mount (also one whose daemon died). Says \"not mounted\" for a folder that holds no mount,\n"
     "and \"busy\" while files under it are still open (lsof +f -- MOUNTPOINT lists them), after trying again for\n"
     "2 s (a process that reads a file of the mount, such as tensorfs status, holds it for that moment), and for\n"
     "the mount's timeout= more when its source is remote (a reader waiting on a server that went away gets its\n"
     "error by then, and lets the mount go).\n"},
    {"ls",
     "usage: tensorfs ls SOURCE [--json] [--cache-dir DIR] [--disk-cache-size SIZE] [--timeout SECONDS]\n"
     "       tensorfs ls --files SOURCE [--json] [--cache-dir DIR] [--disk-cache-size SIZE] [--timeout SECONDS]\n"
     "\n"
     "The tensors of SOURCE, one per line: name, dtype, shape, stored size. --json: their meta.json documents.\n"
     "On a tensorfs mount point, describes the mount's SOURCE. --files: what a mount's source/ folder and side\n"
     "files (config.json, tokenizer files...) will hold, and the candidates of a folder of several models.\n"},
    {"info",
     "usage: tensorfs info SOURCE [--json] [--cache-dir DIR] [--disk-cache-size SIZE] [--timeout SECONDS]\n"
     "\n"
     "Format, files, tensor and parameter counts, size, bits per weight, dtypes and metadata of SOURCE.\n"
     "--json: model.json plus parameter_count, bits_per_weight, dtypes. On a tensorfs mount point, describes\n"
     "the mount's SOURCE.\n"},
    {"cat",
     "usage: tensorfs cat SOURCE TENSOR [--f32 | --npy | --bf16 | --f16 | --raw] [--cache-dir DIR]\n"
     "                   [--disk-cache-size SIZE] [--timeout SECONDS]\n"
     "\n"
     "Writes one tensor to stdout (a file or a pipe, not a terminal), as a mount's files hold it: --f32\n"
     "dequant.f32 (the default), --npy dequant.npy, --bf16 dequant.bf16, --f16 dequant.f16, --raw the stored\n"
     "bytes. TENSOR is the tensor's name or its folder's name.\n"},
    {"convert",
     "usage: tensorfs convert SOURCE OUT.safetensors [--dtype keep|bf16|f16|f32] [--force] [--cache-dir DIR]\n"
     "                       [--disk-cache-size SIZE] [--timeout SECONDS]\n"
     "\n"
     "Writes the bytes a mount shows as model.safetensors to OUT (--dtype: as -o export_dtype=). OUT appears\n"
     "only when complete. Refuses an OUT that is SOURCE or one of its files, and (unless --force) an OUT whose\n"
     "name does not end in .safetensors.\n"},
    {"validate",
     "usage: tensorfs validate SOURCE [--json] [--cache-dir DIR] [--disk-cache-size SIZE] [--timeout SECONDS]\n"
     "\n"
     "Checks every header rule of SOURCE; exit 0 when valid, 1 with one line per problem. --json: one JSON\n"
     "document on stdout, {\"valid\": …, \"format\": …, \"tensors\": …, \"files\": …, \"problems\": [...]}.\n"},
    {"stats",
     "usage: tensorfs stats MOUNTPOINT [--json | --prometheus]\n"
     "\n"
     "The live counters of a mount: --json its .tensorfs/stats.json as it is, --prometheus its\n"
     ".tensorfs/metrics (Prometheus' text format).\n"},
    {"diff",
     "usage: tensorfs diff A B [--tensors GLOB] [--names same|gguf|auto] [--json | --csv] [--quiet]\n"
     "\n"
     "Error metrics of B against A, tensor by tensor: differing values, max |a-b|, RMSE, relative RMSE, cosine,\n"
     "SNR. --names gguf pairs Hugging Face names with a GGUF's (auto: when exactly one side is a GGUF). --json:\n"
     "JSON Lines, --csv: CSV. Exit 0 when equal, 1 when anything differs, 2 on an error.\n"},
    {"prefetch",
     "usage: tensorfs prefetch SOURCE [--tensors GLOB] [--files GLOB] [--quiet] [--verify] [-o OPT]\n"
     "                        [--cache-dir DIR] [--disk-cache-size SIZE] [--timeout SECONDS]\n"
     "\n"
     "Fills the disk cache with SOURCE's weight files (--tensors: the tensors whose names match; --files: every\n"
     "file of source/ and the side files whose paths relative to SOURCE match, config.json and tokenizer files\n"
     "too), max_connections requests in flight; a progress line on a terminal (--quiet: none); the last line\n"
     "gives the bytes fetched and the rate. --verify: each whole file against the checksum its source publishes\n"
     "(the Hub's LFS sha256; S3's x-amz-checksum-sha256, else a single-part upload's ETag MD5; else \"no\n"
     "checksum\"); a file that does not match loses its cached blocks, is named, and the exit status is 1.\n"
     "--timeout SECONDS (or -o timeout=): how long each request may wait for the server, retries included\n"
     "(default 20); past it the command fails naming the file.\n"},
    {"status",
     "usage: tensorfs status [--json]\n"
     "\n"
     "Every tensorfs mount of this machine, one per line: mount point, source (passwords as ***), daemon pid and\n"
     "uptime, bytes served, bytes fetched and disk-cache hits (remote sources), read errors. A mount whose daemon\n"
     "is gone is shown as such, with the command that clears it. Never waits on a mount that does not answer.\n"},
    {"cache",
     "usage: tensorfs cache [--cache-dir DIR] ls | du [--disk-cache-size SIZE] | clear\n"
     "       tensorfs cache [--cache-dir DIR] prune [--older-than DURATION] [--max-size SIZE]\n"
     "\n"
     "The disk cache of remote sources (default $XDG_CACHE_HOME/tensorfs): ls lists the cached objects (URL, ETag,\n"
     "bytes, last read); du totals it against disk_cache_size; prune removes the least recently read blocks\n"
     "first, those not read for DURATION (30s, 15m, 12h, 7d) and/or until SIZE is left; clear removes them all.\n"
     "Safe while mounts use the folder: they fetch again what was removed.\n"},
    {"help", "usage: tensorfs help [COMMAND]\n"},
};

}  // namespace

std::vector<std::string_view> command_names() {
    std::vector<std::string_view> names;
    for (const auto& command : kCommands) names.push_back(command.name);
    return names;
}

bool is_command(std::string_view name) {
    for (const auto& command : kCommands) {
        if (command.name == name) return true;
    }
    return false;
}

std::optional<std::string> command_usage(std::string_view name) {
    for (const auto& command : kCommands) {
        if (command.name == name && !command.usage.empty()) return std::string(command.usage);
    }
    return std::nullopt;
}

}  // namespace tensorfs::cli
