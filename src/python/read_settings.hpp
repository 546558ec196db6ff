// The keyword options of safe_open, load, info and diff: the mount options that mean something without a mount,
// with the same names, values and meanings, taken by the parser of `-o` (src/fuse/mount_options.hpp), so that every
// option a mount takes for its source is taken here too.
#pragma once

#include <cstdint>
#include <string>

#include <pybind11/pybind11.h>

#include "tensorfs/source_options.hpp"

namespace tensorfs::python {

struct ReadSettings {
    SourceOptions source_options;   // cache_dir, disk_cache_size, max_connections, readahead...
    std::string model;              // model=PATH: the model of a folder that holds several
    std::uint64_t cache_size = 0;   // cache_size=: the memory budget (0: the mount's default)
    unsigned threads = 0;           // threads=: threads that fetch and decode at once (0: the default)

    // What the memory budget is: cache_size, else the mount's default.
    std::uint64_t budget() const;
};

// Raises TypeError for a name that is no mount option, or one that means nothing without a mount (libfuse's,
// export_dtype), and ValueError for a value the mount would refuse, with the mount's message. `function` names the
// caller in messages ("safe_open").
ReadSettings read_settings(const pybind11::kwargs& options, const std::string& function);

}  // namespace tensorfs::python
