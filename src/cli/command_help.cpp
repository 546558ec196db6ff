#include "command_help.hpp"

namespace tensorfs::cli {
namespace {

struct CommandHelp {
    std::string_view name;
    std::string_view usage;  // empty for mount: main.cpp prints its part of the whole help
};

constexpr CommandHelp kCommands[] = {
    {"mount", ""},
    {"umount",
     "usage: tensorfs umount MOUNTPOINT\n"
     "\n"
     "Unmounts a tensorfs mount (also one whose daemon died). Says \"no such folder\", \"not mounted\" for a folder\n"
     "that holds no mount, \"busy\" naming the mounts inside it, and \"busy\" while files under it are still open\n"
     "(lsof +f -- MOUNTPOINT lists them), after trying again for 2 s (a process that reads a file of the mount,\n"
     "such as tensorfs status, holds it for that moment), and for the mount's timeout= more when its source is\n"
     "remote (a reader waiting on a server that went away gets its error by then, and lets the mount go).\n"},
    {"ls",
     "usage: tensorfs ls SOURCE [--json] [--model PATH] [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE]\n"
     "                  [--timeout SECONDS]\n"
     "       tensorfs ls --files SOURCE [--json] [--model PATH] [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE]\n"
     "                  [--timeout SECONDS]\n"
     "\n"
     "The tensors of SOURCE, one per line: name, dtype, shape, stored size. --json: their meta.json documents.\n"
     "On a tensorfs mount point, describes the mount's SOURCE. --files: what a mount's source/ folder and side\n"
     "files (config.json, tokenizer files...) will hold, and the candidates of a folder of several models.\n"
     "A folder of several models has no tensors of its own: ls lists the models (--json: []); --model PATH picks\n"
     "one, by its path in the folder, as -o model=PATH does for a mount.\n"},
    {"info",
     "usage: tensorfs info SOURCE [--json] [--model PATH] [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE]\n"
     "                    [--timeout SECONDS]\n"
     "\n"
     "Format, files, tensor and parameter counts, size, bits per weight, dtypes and metadata of SOURCE.\n"
     "--json: model.json plus parameter_count, bits_per_weight, dtypes. On a tensorfs mount point, describes\n"
     "the mount's SOURCE. A folder of several models: the models (--json: its mount's model.json, which lists\n"
     "them); --model PATH picks one.\n"},
    {"cat",
     "usage: tensorfs cat SOURCE TENSOR [--f32 | --npy | --bf16 | --f16 | --raw] [--model PATH] [--cache-dir DIR]\n"
     "                   [-o OPT] [--disk-cache-size SIZE] [--timeout SECONDS]\n"
     "\n"
     "Writes one tensor to stdout (a file or a pipe, not a terminal), as a mount's files hold it: --f32\n"
     "dequant.f32 (the default), --npy dequant.npy, --bf16 dequant.bf16, --f16 dequant.f16, --raw the stored\n"
     "bytes. TENSOR is the tensor's name or its folder's name. --model PATH: the model at PATH in a folder\n"
     "SOURCE of several models (without it, such a folder is refused, naming them).\n"},
    {"convert",
     "usage: tensorfs convert SOURCE OUT.safetensors [--dtype keep|bf16|f16|f32] [--force] [--model PATH]\n"
     "                       [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE] [--timeout SECONDS]\n"
     "\n"
     "Writes the bytes a mount shows as model.safetensors to OUT (--dtype: as -o export_dtype=). OUT appears\n"
     "only when complete. Refuses an OUT that is SOURCE or one of its files, and (unless --force) an OUT whose\n"
     "name does not end in .safetensors. --model PATH: as for cat.\n"},
    {"validate",
     "usage: tensorfs validate SOURCE [--json] [--model PATH] [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE]\n"
     "                        [--timeout SECONDS]\n"
     "\n"
     "Checks every header rule of SOURCE; exit 0 when valid, 1 with one line per problem. --json: one JSON\n"
     "document on stdout, {\"valid\": …, \"format\": …, \"tensors\": …, \"files\": …, \"problems\": [...]}.\n"
     "--model PATH: as for cat.\n"},
    {"stats",
     "usage: tensorfs stats MOUNTPOINT [--json | --prometheus]\n"
     "\n"
     "The live counters of a mount: --json its .tensorfs/stats.json as it is, --prometheus its\n"
     ".tensorfs/metrics (Prometheus' text format).\n"},
    {"diff",
     "usage: tensorfs diff A B [--tensors GLOB] [--names same|gguf|auto] [--json | --csv] [--quiet] [--model PATH]\n"
     "                     [-o OPT] [--cache-dir DIR] [--disk-cache-size SIZE]\n"
     "\n"
     "Error metrics of B against A, tensor by tensor: differing values, max |a-b|, RMSE, relative RMSE, cosine,\n"
     "SNR. --names gguf pairs Hugging Face names with a GGUF's (auto: when exactly one side is a GGUF). --json:\n"
     "JSON Lines, --csv: CSV. Exit 0 when equal, 1 when anything differs, 2 on an error. --model PATH: the\n"
     "model at PATH in A and in B, both folders (name the file for one side: A/PATH).\n"},
    {"prefetch",
     "usage: tensorfs prefetch SOURCE [--tensors GLOB] [--files GLOB] [--quiet] [--verify] [-o OPT] [--model PATH]\n"
     "                        [--cache-dir DIR] [--disk-cache-size SIZE] [--timeout SECONDS]\n"
     "\n"
     "Fills the disk cache with SOURCE's weight files (--tensors: the tensors whose names match; --files: every\n"
     "file of source/ and the side files whose paths relative to SOURCE match, config.json and tokenizer files\n"
     "too), max_connections requests in flight; a progress line on a terminal (--quiet: none); the last line\n"
     "gives the bytes fetched and the rate. --verify: each whole file against the checksum its source publishes\n"
     "(the Hub's LFS sha256; S3's x-amz-checksum-sha256, else a single-part upload's ETag MD5; else \"no\n"
     "checksum\"); a file that does not match loses its cached blocks, is named, and the exit status is 1.\n"
     "A local SOURCE is read in place, with no disk cache: there is nothing to prefetch (exit 0). --model PATH\n"
     "(or -o model=PATH): the model at PATH in a folder SOURCE of several models. --timeout SECONDS (or -o\n"
     "timeout=): how long each request may wait for the server, retries included (default 20); past it the\n"
     "command fails naming the file.\n"},
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
    {"csi",
     "usage: tensorfs csi --endpoint unix:///PATH/csi.sock --node-id NAME [--state-dir DIR] [--cache-dir DIR]\n"
     "                    [--disk-cache-size SIZE] [--local-root DIR] [--holder-socket PATH]\n"
     "                    [--daemon-log holder|syslog]\n"
     "\n"
     "Serves the CSI node plugin of driver csi.tensorfs.io (CSI v1 Identity and Node services) at the socket, for\n"
     "kubelet: a volume is a SOURCE (volumeAttributes: source, and mount options by their names), mounted\n"
     "read-only for every uid by a `tensorfs mount` daemon that runs apart from the plugin. Secrets (HF_TOKEN,\n"
     "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, username, password) reach the daemon through a\n"
     "pipe, never a command line, environment or file, and again at each republish through its secrets socket\n"
     "(in the folder of the plugin's socket, volumes/): the running volume uses them for its next requests. An\n"
     "s3:// volume with the attribute aws_role_arn reads with that role's keys from AWS STS, for the pod's\n"
     "service account token (the CSIDriver's tokenRequests), renewed before they expire.\n"
     "--state-dir (default /var/lib/tensorfs/csi) keeps what was\n"
     "published, for a restarted plugin; --cache-dir (default /var/cache/tensorfs) is the one disk cache of every\n"
     "volume of the node, --disk-cache-size its size. A local SOURCE must be under --local-root (default\n"
     "/srv/models). The plugin is started again if it dies; SIGTERM ends it. With --holder-socket, the mount\n"
     "holder of that socket (tensorfs-holder, its own DaemonSet) runs the daemons, so that they outlive the\n"
     "plugin's container; they log to its stderr (--daemon-log syslog: to syslog).\n"
     "deploy/kubernetes/ in the source holds the manifests; the README's Kubernetes section says the rest.\n"},
    {"help",
     "usage: tensorfs help [COMMAND]\n"
     "\n"
     "The usage of COMMAND (the same as tensorfs COMMAND --help): mount, umount, ls, info, cat, convert, validate,\n"
     "stats, diff, prefetch, status, cache, csi, help. Without COMMAND, the whole help (tensorfs --help).\n"},
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
