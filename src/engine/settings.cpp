#include "tensorfs/settings.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

#include "remote/disk_cache_budget.hpp"
#include "tensorfs/size_option.hpp"
#include "tensorfs/suggestions.hpp"

namespace tensorfs {
namespace {

constexpr std::array<OptionInfo, 15> kOptions{{
    {"cache_size", "SIZE",
     "memory for decoded values and, for a remote source, half of it for fetched blocks (default 256M; sizes take "
     "K, M, G, T in any case: 512M, 512m, 512MiB)",
     OptionUse::Source},
    {"threads", "N", "a mount's threads serving reads (1 to 1024, default 16); Python's readers (default: the cores)",
     OptionUse::Source},
    {"export_dtype", "keep|bf16|f16|f32",
     "model.safetensors: keep (every dtype safetensors has; ggml quants as F32; the default), or bf16, f16, f32 for "
     "every floating tensor (integers and bools keep theirs)",
     OptionUse::Mount},
    {"model", "PATH", "the model of a folder that holds several (relative to the folder, e.g. model=x-Q4_K_M.gguf)",
     OptionUse::Source},
    {"cache_dir", "DIR", "remote sources' disk cache (default $XDG_CACHE_HOME/tensorfs)", OptionUse::Source},
    {"disk_cache_size", "SIZE", "the most the disk cache holds (default 10G; 0: none, else at least 1M)",
     OptionUse::Source},
    {"max_connections", "N", "range requests in flight for read-ahead (1 to 64, default 16)", OptionUse::Source},
    {"readahead", "SIZE",
     "how far ahead of a sequential reader to fetch, at most (default 64M, and at most a quarter of cache_size; a "
     "mount warns when it cuts it)",
     OptionUse::Source},
    {"proxy", "URL",
     "the HTTP proxy of every request (default: http_proxy, HTTPS_PROXY, ALL_PROXY; hosts in NO_PROXY go direct)",
     OptionUse::Source},
    {"header", "NAME:VALUE", "a header every request carries (repeat the option for more), e.g. "
     "header=X-Dragonfly-Use-P2P:true", OptionUse::Source},
    {"timeout", "SECONDS",
     "how long one read may wait for the network, retries included (default 20); past it the read fails with EIO "
     "and the mount goes on",
     OptionUse::Source},
    {"log_fd", "N", "the daemon's lines go to this open descriptor alone", OptionUse::Daemon},
    {"log_id", "TEXT", "what the daemon's lines name it by", OptionUse::Daemon},
    {"secrets_socket", "PATH", "the unix socket where the daemon takes new credentials", OptionUse::Daemon},
    {"csi_volume", "ID", "the Kubernetes volume the daemon serves: messages in Kubernetes terms", OptionUse::Daemon},
}};

// 1 to `most`.
std::optional<unsigned> count_of(std::string_view text, unsigned most) {
    unsigned count = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (error != std::errc() || end != text.data() + text.size() || count == 0 || count > most) return std::nullopt;
    return count;
}

TakenSetting refused(std::string message) { return {SettingOutcome::Refused, std::move(message)}; }

// "bad LABEL 'VALUE' (EXAMPLE)".
TakenSetting bad(std::string_view label, std::string_view value, std::string_view example) {
    return refused("bad " + std::string(label) + " '" + std::string(value) + "' (" + std::string(example) + ")");
}

TakenSetting taken() { return {SettingOutcome::Taken, {}}; }

TakenSetting take_size_setting(std::string_view name, std::string_view value, Settings& settings,
                               std::string_view label) {
    const auto size = parse_size(value);
    if (name == "cache_size") {
        if (!size) return bad(label, value, "e.g. 512M, 2G");
        const std::uint64_t smallest_chunk = chunk_bytes_for_budget(0);
        if (std::string problem = budget_problem(label, value, *size, smallest_chunk, "one chunk of decoded values");
            !problem.empty()) {
            return refused(std::move(problem));
        }
        settings.cache_size = *size;
    } else if (name == "disk_cache_size") {
        if (!size) return bad(label, value, "e.g. 10G; 0 for none");
        if (std::string problem = remote::disk_cache_size_problem(label, value, *size); !problem.empty()) {
            return refused(std::move(problem));
        }
        settings.source.disk_cache_size = *size;
    } else {   // readahead
        if (!size) return bad(label, value, "e.g. 64M; 0 for none");
        settings.source.readahead = *size;
        settings.readahead_given = true;
    }
    return taken();
}

TakenSetting take_daemon_setting(std::string_view name, std::string_view value, Settings& settings,
                                 std::string_view label) {
    if (name == "log_fd") {
        int fd = -1;
        const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), fd);
        if (error != std::errc() || end != value.data() + value.size() || fd < 3) {
            return bad(label, value, "an open file descriptor, 3 or more");
        }
        settings.log_fd = fd;
    } else if (name == "log_id") {
        settings.log_id = std::string(value);
    } else if (name == "secrets_socket") {
        if (!value.starts_with("/")) {
            return refused(std::string(label) + " needs an absolute path (a unix socket to make)");
        }
        settings.secrets_socket = std::string(value);
    } else {   // csi_volume
        if (value.empty()) return refused(std::string(label) + " needs a volume id");
        // From here on, even for the options after it: what to do is said in Kubernetes terms.
        settings.csi_volume = std::string(value);
    }
    return taken();
}

}  // namespace

std::span<const OptionInfo> tensorfs_options() { return kOptions; }

const OptionInfo* option_named(std::string_view name) {
    const auto found =
        std::find_if(kOptions.begin(), kOptions.end(), [&](const OptionInfo& option) { return option.name == name; });
    return found == kOptions.end() ? nullptr : &*found;
}

TakenSetting take_setting(std::string_view name, std::string_view value, Settings& settings, std::string_view label) {
    const OptionInfo* option = option_named(name);
    if (option == nullptr) return {SettingOutcome::Unknown, {}};
    if (label.empty()) label = name;
    if (option->use == OptionUse::Daemon) return take_daemon_setting(name, value, settings, label);
    if (name == "cache_size" || name == "disk_cache_size" || name == "readahead") {
        return take_size_setting(name, value, settings, label);
    }
    if (name == "export_dtype") {
        const auto dtype = export_dtype_named(value);
        if (!dtype) return bad(label, value, "keep, bf16, f16 or f32");
        settings.export_dtype = *dtype;
    } else if (name == "threads") {
        const auto threads = count_of(value, 1024);
        if (!threads) return bad(label, value, "1 to 1024");
        settings.threads = *threads;
    } else if (name == "model") {
        if (value.empty()) return refused(std::string(label) + " needs a path in the folder (e.g. model-Q4_K_M.gguf)");
        settings.model = std::string(value);
    } else if (name == "cache_dir") {
        if (value.empty()) return refused(std::string(label) + " needs a folder");
        settings.source.cache_dir = std::string(value);
    } else if (name == "max_connections") {
        const auto connections = count_of(value, kMostConnections);
        if (!connections) return bad(label, value, "1 to " + std::to_string(kMostConnections));
        settings.source.max_connections = *connections;
    } else if (name == "proxy") {
        if (std::string error = take_proxy(value, settings.source); !error.empty()) return refused(std::move(error));
    } else if (name == "header") {
        if (std::string error = take_header(value, settings.source, !settings.csi_volume.empty()); !error.empty()) {
            return refused(std::move(error));
        }
    } else {   // timeout
        const auto timeout = parse_timeout(value);
        if (!timeout) return bad(label, value, "seconds, e.g. 20 or 2.5");
        settings.source.timeout = *timeout;
    }
    return taken();
}

std::string unknown_option(std::string_view text, std::span<const std::string_view> others, std::string_view kind) {
    const std::string_view name = text.substr(0, text.find('='));
    std::vector<std::string_view> names;
    for (const OptionInfo& option : kOptions) names.push_back(option.name);
    names.insert(names.end(), others.begin(), others.end());
    const std::string found = nearest(name, names);
    std::string message = "unknown " + std::string(kind) + " '" + std::string(text) + "'";
    if (found.empty() || found == name) return message;
    return message + "; did you mean '" + found + std::string(text.substr(name.size())) + "'?";
}

}  // namespace tensorfs
