// The libfuse low-level operations of a tensorfs mount: a thin map from FUSE requests to Tree and Content.
#pragma once

#include <sys/types.h>

#include <ctime>

#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>

#include "tensorfs/background_queue.hpp"
#include "tensorfs/engine.hpp"

namespace tensorfs {

// What the operations need; passed to fuse_session_new as userdata.
struct Filesystem {
    const Engine& engine;
    std::uint64_t total_bytes;   // for statfs
    struct timespec mtime;       // of the (first) source file; the tree shows it for every node
    uid_t uid;
    gid_t gid;
    // The largest read the kernel may send (the max_read mount option), told to libfuse at init.
    unsigned max_read = 0;
    // Set at init when the kernel opens folders without an opendir request (then it is never sent one).
    bool kernel_opens_folders = false;
    // Where reads are served; nullptr: on the thread that took the request.
    BackgroundQueue* read_workers = nullptr;
};

const fuse_lowlevel_ops& tensorfs_operations();

}  // namespace tensorfs
