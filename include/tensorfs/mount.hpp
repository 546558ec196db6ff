// Mounting a source: the daemon's whole life, from catalog to unmount.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensorfs/model_export.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs {

struct MountOptions {
    std::string source;
    std::string mountpoint;
    bool foreground = false;
    bool debug = false;
    bool single_threaded = false;
    std::vector<std::string> fuse_options;   // passed to libfuse as `-o` options
    std::uint64_t cache_size = 0;            // bytes of decoded chunks kept; 0 = default
    unsigned threads = 0;                    // FUSE worker threads; 0 = default
    ExportDtype export_dtype = ExportDtype::Keep;   // the dtypes of model.safetensors
    std::string model;                       // model=PATH: the model to mount in a folder SOURCE; "": the folder rule
    SourceOptions source_options;            // cache_dir=, disk_cache_size= (remote sources)
    bool readahead_given = false;            // readahead= was given: the mount warns when cache_size cuts it
    int log_fd = -1;                         // log_fd=N: the daemon's log lines go to N alone (no syslog)
    std::string log_id;                      // log_id=TEXT: each such line names it (a Kubernetes volume's id)
    std::string secrets_socket;              // secrets_socket=PATH: the daemon takes new credentials there
    std::string csi_volume;                  // csi_volume=ID: the mount serves this Kubernetes volume
};

// Returns the process exit status: 0 after a clean unmount, 1 invalid source or options, 2 the mount failed.
// Without `foreground` it returns in the parent once the mount is ready, leaving the daemon running.
int run_mount(const MountOptions& options);

// Unmounts a tensorfs mount (also one whose daemon died). Returns an exit status.
int run_umount(const std::string& mountpoint);

}  // namespace tensorfs
