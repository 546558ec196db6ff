// tensorfs's own options, for every front end: their names, what they take, their defaults, their parsing, and how
// the memory budget is shared out. A mount's -o list, the command's flags, Python's keyword arguments and a CSI
// volume's attributes all come here by the options' names; libfuse's own options stay with the FUSE front end.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tensorfs/dequant_reader.hpp"
#include "tensorfs/model_export.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs {

// Who an option is for.
enum class OptionUse : std::uint8_t {
    Source,  // every reader of a SOURCE: a mount, the commands, Python, a CSI volume
    Mount,   // a FUSE mount only: what its tree shows, how it serves
    Daemon,  // set by the CSI plugin for the daemons it starts, not by users
};

struct OptionInfo {
    std::string_view name;    // "cache_size"
    std::string_view value;   // what it takes, for usage lines: "SIZE", "keep|bf16|f16|f32"
    std::string_view help;    // one line, for --help, the manual and configuration.md
    OptionUse use;
};

// Every option, in the order usage lines list them. The one list: --help, the manual, the completion and the docs
// name these and no others (tests/integration/test_options.py checks).
std::span<const OptionInfo> tensorfs_options();
const OptionInfo* option_named(std::string_view name);

struct Settings {
    std::uint64_t cache_size = 0;                   // cache_size=: the memory budget; 0: kDefaultCacheBudget
    unsigned threads = 0;                           // threads=: request threads of a mount, readers of Python
    ExportDtype export_dtype = ExportDtype::Keep;   // export_dtype=: the dtypes of model.safetensors
    std::string model;                              // model=PATH: the model of a folder SOURCE; "": the folder rule
    SourceOptions source;                           // cache_dir=, disk_cache_size=, max_connections=, readahead=,
                                                    // proxy=, header=, timeout=
    bool readahead_given = false;                   // readahead= was given: a mount warns when the budget cuts it
    // The CSI plugin's, for the daemons it starts (OptionUse::Daemon).
    int log_fd = -1;              // log_fd=N: the daemon's lines go to N alone
    std::string log_id;           // log_id=: named in those lines
    std::string secrets_socket;   // secrets_socket=PATH: where the daemon takes new credentials
    std::string csi_volume;       // csi_volume=ID: messages say what to do in Kubernetes terms

    std::uint64_t budget() const { return cache_size != 0 ? cache_size : kDefaultCacheBudget; }
    // The budget's shares. A remote source's fetched blocks in memory take half of it; decoded values the rest (all
    // of it for a local source).
    std::uint64_t fetched_blocks_budget() const { return budget() / 2; }
    std::uint64_t decoded_budget(bool remote) const { return remote ? budget() - fetched_blocks_budget() : budget(); }
};

// What take_setting did with an option.
enum class SettingOutcome : std::uint8_t { Taken, Unknown, Refused };
struct TakenSetting {
    SettingOutcome outcome;
    std::string message;   // Refused: why, for a user ("bad cache_size '5q' (e.g. 512M, 2G)")
};

// Takes option `name` with `value` into `settings`. `label` names it in messages (a flag: "--disk-cache-size"); by
// default the option's name.
TakenSetting take_setting(std::string_view name, std::string_view value, Settings& settings,
                          std::string_view label = {});

// "unknown OPTION 'TEXT'", with the nearest of tensorfs's options and of `others` suggested when TEXT's name looks
// like a typo of one ("did you mean 'cache_size=1G'?"). `kind` names what it is: "mount option", "option".
std::string unknown_option(std::string_view text, std::span<const std::string_view> others, std::string_view kind);

}  // namespace tensorfs
