// Every request is answered exactly once; exceptions never cross into libfuse (they become errno replies).
#include "fuse_ops.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <new>
#include <vector>

#include "remote/log.hpp"
#include "request_loop.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/names.hpp"
#include "tensorfs/read_began.hpp"

namespace tensorfs {
namespace {

// The tree never changes while mounted, so the kernel may keep names and attributes for the life of the mount:
// about 30 years (the kernel caps a timeout at what its jiffies can count; a day made a mount that lives longer
// look its whole tree up again).
constexpr double kCacheSeconds = 1e9;

// glibc's readdir asks getdents for as many bytes as the directory's st_blksize (at least 32 KiB, at most 1 MiB),
// and the kernel sizes each READDIRPLUS request, and the buffer it allocates for it, from that. The root lists
// every tensor: 1 MiB takes about 5,000 entries per round trip. A tensor folder holds a few entries: the smallest
// buffer (1 MiB there made the kernel allocate and map 256 pages for every folder a walk opened).
constexpr blksize_t kRootBlockSize = 1 << 20;
constexpr blksize_t kFolderBlockSize = 4096;
// Files: the size readers are told to read in.
constexpr blksize_t kFileBlockSize = 1 << 20;

// The largest read of `raw` the loop's thread answers itself (when its pages are in the page cache).
constexpr std::size_t kLargestQuickRead = 128 << 10;

Filesystem& filesystem_of(fuse_req_t req) { return *static_cast<Filesystem*>(fuse_req_userdata(req)); }

void count(fuse_req_t req, FuseRequest request) { filesystem_of(req).engine.content().stats().requests.add(request); }

struct stat attributes_of(const Filesystem& fs, Node node) {
    struct stat st {};
    st.st_ino = Tree::inode_of(node);
    if (node.is_directory()) {
        st.st_mode = S_IFDIR | 0555;
        st.st_nlink = 2;
        st.st_blksize = node.kind == NodeKind::Root ? kRootBlockSize : kFolderBlockSize;
    } else {
        st.st_mode = S_IFREG | 0444;
        st.st_nlink = 1;
        st.st_size = static_cast<off_t>(fs.engine.content().size(node));
        st.st_blocks = (st.st_size + 511) / 512;
        st.st_blksize = kFileBlockSize;
    }
    st.st_uid = fs.uid;
    st.st_gid = fs.gid;
    st.st_atim = st.st_mtim = st.st_ctim = fs.engine.content().modified(node).value_or(fs.mtime);
    return st;
}

fuse_entry_param entry_of(const Filesystem& fs, Node node) {
    fuse_entry_param entry{};
    entry.ino = Tree::inode_of(node);
    entry.attr = attributes_of(fs, node);
    entry.attr_timeout = kCacheSeconds;
    entry.entry_timeout = kCacheSeconds;
    return entry;
}

// A reply the kernel refused: the reader was interrupted, or the kernel could not copy from a source mapping
// whose file shrank (then the kernel itself fails the read with EIO). The request is gone: only count it.
void count_reply(const Filesystem& fs, int result) {
    if (result != 0) fs.engine.content().stats().reply_errors.add(1);
}

// Runs `body`, turning any exception into an errno reply.
template <typename Body>
void answer(fuse_req_t req, Body&& body) {
    try {
        body();
    } catch (const IoError& error) {
        filesystem_of(req).engine.content().stats().read_errors.add(1);
        remote::log_failed_read(error.what());
        fuse_reply_err(req, EIO);
    } catch (const std::bad_alloc&) {
        fuse_reply_err(req, ENOMEM);
    } catch (...) {
        fuse_reply_err(req, EIO);
    }
}

void op_init(void* userdata, fuse_conn_info* conn) {
    Filesystem& fs = *static_cast<Filesystem*>(userdata);
    // Many reads in flight at once (readahead windows of several readers), each served by its own thread.
    conn->max_background = 128;
    conn->congestion_threshold = 96;
    conn->max_read = fs.max_read;  // as the mount's options said (libfuse checks)
    // Replies from a file (a remote file's disk cache) are spliced, not copied through this process.
    if (conn->capable & FUSE_CAP_SPLICE_WRITE) conn->want |= FUSE_CAP_SPLICE_WRITE;
    // Contents never change: no need to compare mtimes to drop cached pages.
    conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
    // Always readdirplus: `ls -l` of a 100,000-entry root then needs no lookup per entry. (In "auto" mode the
    // kernel drops to plain readdir after the first batch when nothing was looked up in between.)
    if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
    conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
    // A kernel that can open directories without asking is told so by the first opendir's ENOSYS (see op_opendir).
    fs.kernel_opens_folders = (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) != 0;
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    count(req, FuseRequest::Lookup);
    answer(req, [&] {
        const Filesystem& fs = filesystem_of(req);
        const auto dir = fs.engine.tree().node_of(parent);
        if (!dir) return (void)fuse_reply_err(req, ENOENT);
        if (!dir->is_directory()) return (void)fuse_reply_err(req, ENOTDIR);
        // No entry is longer than statfs's f_namemax; a longer name is too long, as on any filesystem.
        if (std::strlen(name) > kMaxDirectoryName) return (void)fuse_reply_err(req, ENAMETOOLONG);
        const auto node = fs.engine.tree().lookup(*dir, name);
        if (!node) {
            // The tree never changes: the kernel may remember that the name is not there (a negative entry, inode 0),
            // so that a second glob of */meta.json asks nothing of source/ either.
            fuse_entry_param none{};
            none.entry_timeout = kCacheSeconds;
            return count_reply(fs, fuse_reply_entry(req, &none));
        }
        const fuse_entry_param entry = entry_of(fs, *node);
        count_reply(fs, fuse_reply_entry(req, &entry));
    });
}

// The kernel drops inodes it no longer caches: nothing to do, the tree is fixed and owns no per-inode state.
void op_forget(fuse_req_t req, fuse_ino_t, uint64_t) {
    count(req, FuseRequest::Forget);
    fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t, fuse_forget_data*) {
    count(req, FuseRequest::Forget);
    fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
    count(req, FuseRequest::Getattr);
    answer(req, [&] {
        const Filesystem& fs = filesystem_of(req);
        const auto node = fs.engine.tree().node_of(ino);
        if (!node) return (void)fuse_reply_err(req, ENOENT);
        const struct stat st = attributes_of(fs, *node);
        count_reply(fs, fuse_reply_attr(req, &st, kCacheSeconds));
    });
}

// The live counters: rendered anew at every open, from memory. They never wait, so the loop's thread answers their
// reads (op_read): `tensorfs stats`, `status` and `umount` get them at once also while every worker waits for a
// server that went away.
bool is_live_counters(Node node) { return node.kind == NodeKind::StatsJson || node.kind == NodeKind::Metrics; }

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    count(req, FuseRequest::Open);
    const Filesystem& fs = filesystem_of(req);
    const auto node = fs.engine.tree().node_of(ino);
    if (!node) return (void)fuse_reply_err(req, ENOENT);
    if (node->is_directory()) return (void)fuse_reply_err(req, EISDIR);
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) return (void)fuse_reply_err(req, EROFS);
    // A file that could not be opened at mount has no bytes to serve (model.json's "problems" says why).
    if (fs.engine.content().unopened(*node)) {
        fs.engine.content().stats().read_errors.add(1);
        return (void)fuse_reply_err(req, EIO);
    }
    // Live counters must be read anew at every open; everything else may stay in the page cache.
    fi->keep_cache = !is_live_counters(*node);
    fi->noflush = 1;
    count_reply(fs, fuse_reply_open(req, fi));
}

// raw (and a view in the tensor's own encoding) of a mapped source: straight from the mapping, so the kernel copies
// the bytes once, from the page cache into the reply (measured as fast as pread into a buffer and a reply from it,
// without that extra copy). False when the bytes are not mapped (remote files).
bool replied_from_mapping(fuse_req_t req, Filesystem& fs, Node node, off_t off, size_t size) {
    const auto mapped = fs.engine.mapped_read(node, static_cast<std::uint64_t>(off), size);
    if (!mapped) return false;
    count_reply(fs, fuse_reply_buf(req, mapped->bytes, mapped->length));
    fs.engine.done_with(*mapped);
    return true;
}

// A reply of the pieces. Spans of the disk cache's files are spliced from them: the kernel copies their bytes once,
// from its page cache into the reply, where a read into memory and a reply from there copied them twice (libfuse
// reads them into a buffer itself when the kernel cannot splice, or its pipe cannot hold the reply).
void reply_pieces(fuse_req_t req, Filesystem& fs, const ReadPieces& pieces) {
    const auto& iov = pieces.iov();
    if (iov.empty()) return count_reply(fs, fuse_reply_buf(req, nullptr, 0));
    if (pieces.file_spans().empty()) {
        return count_reply(fs, fuse_reply_iov(req, iov.data(), static_cast<int>(iov.size())));
    }
    // fuse_bufvec ends in an array of one buffer that holds as many as `count` says.
    std::vector<std::max_align_t> storage(
        (sizeof(fuse_bufvec) + (iov.size() - 1) * sizeof(fuse_buf) + sizeof(std::max_align_t) - 1) /
        sizeof(std::max_align_t));
    auto* data = new (storage.data()) fuse_bufvec{};
    data->count = iov.size();
    auto span = pieces.file_spans().begin();
    for (std::size_t i = 0; i < iov.size(); ++i) {
        fuse_buf& buf = data->buf[i];
        buf = fuse_buf{};
        buf.size = iov[i].iov_len;
        if (iov[i].iov_base != nullptr) {
            buf.mem = iov[i].iov_base;
        } else {
            buf.flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
            buf.fd = span->file.fd();
            buf.pos = static_cast<off_t>(span->offset);
            ++span;
        }
    }
    count_reply(fs, fuse_reply_data(req, data, fuse_buf_copy_flags{}));
}

void op_release(fuse_req_t req, fuse_ino_t, fuse_file_info*) {
    count(req, FuseRequest::Release);
    fuse_reply_err(req, 0);
}

// The histogram a read of `kind` is counted in; nullptr for the live counters' own files.
LatencyHistogram* read_latency_of(Stats& stats, NodeKind kind) {
    switch (kind) {
        case NodeKind::Raw:
        case NodeKind::SideFile:
        case NodeKind::SourceFile: return &stats.raw_read_latency;
        case NodeKind::ModelJson:
        case NodeKind::MetaJson: return &stats.meta_read_latency;
        case NodeKind::ModelSafetensors: return &stats.model_read_latency;
        case NodeKind::StatsJson:
        case NodeKind::Metrics: return nullptr;
        default: return &stats.dequant_read_latency;  // dequant.f32, .npy, .bf16, .f16
    }
}

void observe_latency(Filesystem& fs, NodeKind kind, std::chrono::steady_clock::time_point arrived) {
    if (LatencyHistogram* latency = read_latency_of(fs.engine.content().stats(), kind)) {
        const auto elapsed = std::chrono::steady_clock::now() - arrived;
        latency->observe(
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()));
    }
}

void serve_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, std::chrono::steady_clock::time_point arrived) {
    // A remote source's timeout= counts from here: the time queued for a worker is the reader's wait too.
    const ReadBegan began(arrived);
    Filesystem& fs = filesystem_of(req);
    const auto node = fs.engine.tree().node_of(ino);
    if (!node) return (void)fuse_reply_err(req, ENOENT);
    answer(req, [&] {
        if (off < 0) return (void)fuse_reply_err(req, EINVAL);
        if (replied_from_mapping(req, fs, *node, off, size)) return;
        ReadPieces pieces(true);
        fs.engine.content().read_pieces(*node, static_cast<std::uint64_t>(off), size, pieces);
        reply_pieces(req, fs, pieces);
    });
    observe_latency(fs, node->kind, arrived);
}

// Answers a read of a file served from the source (raw, or a view in the tensor's own encoding) on the loop's
// thread when it is a copy of a few pages already in the page cache, and says whether it did: handing 4 KiB random
// reads to a worker cost a third of their speed (a thread more to wake for each). One preadv2(RWF_NOWAIT) both
// checks and copies: it stops where a page would have to come from the disk, and a remote source never copies
// here (mincore over the source's mapping and a reply from it cost a page fault more for each page not yet mapped
// in this process). Anything that could wait goes to the workers.
bool served_from_page_cache(fuse_req_t req, Filesystem& fs, Node node, off_t off, size_t size,
                            std::chrono::steady_clock::time_point arrived) {
    if (off < 0 || size > kLargestQuickRead) return false;
    thread_local std::vector<char> buffer(kLargestQuickRead);  // on the heap: only the loop's thread uses one
    const auto served = fs.engine.read_from_page_cache(node, static_cast<std::uint64_t>(off), size, buffer.data());
    if (!served) return false;  // the worker reads it, or meets the same error and answers EIO
    count_reply(fs, fuse_reply_buf(req, buffer.data(), *served));
    observe_latency(fs, node.kind, arrived);
    poll_after_this_request();
    return true;
}

// Reads go to the read workers when there are some (mount.cpp says why), but for quick ones of the source's bytes
// (a copy the loop's thread makes faster than it could hand it over) and the live counters; the loop's thread
// answers the rest.
void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
    const auto arrived = std::chrono::steady_clock::now();
    count(req, FuseRequest::Read);
    Filesystem& fs = filesystem_of(req);
    if (fs.read_workers != nullptr) {
        const auto node = fs.engine.tree().node_of(ino);
        if (node && served_from_page_cache(req, fs, *node, off, size, arrived)) return;
        if (node && is_live_counters(*node)) return serve_read(req, ino, size, off, arrived);
        fs.read_workers->offer([=] { serve_read(req, ino, size, off, arrived); });  // never refused: unbounded
        return;
    }
    serve_read(req, ino, size, off, arrived);
}

// Folders never change, so opening one needs no round trip. A kernel that can do without opendir
// (FUSE_CAP_NO_OPENDIR_SUPPORT) takes the first ENOSYS as "never ask again": it sends no more opendir or
// releasedir, and opens every folder with FOPEN_KEEP_CACHE | FOPEN_CACHE_DIR, so that its listing, once read, is
// answered from the kernel's cache for as long as the mount lives (the cache is dropped only when the folder's
// mtime changes, which never happens here, or under memory pressure). Other kernels get those flags here.
void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    count(req, FuseRequest::Opendir);
    const Filesystem& fs = filesystem_of(req);
    if (fs.kernel_opens_folders) return (void)fuse_reply_err(req, ENOSYS);
    const auto node = fs.engine.tree().node_of(ino);
    if (!node) return (void)fuse_reply_err(req, ENOENT);
    if (!node->is_directory()) return (void)fuse_reply_err(req, ENOTDIR);
    fi->cache_readdir = 1;
    fi->keep_cache = 1;
    count_reply(fs, fuse_reply_open(req, fi));
}

void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info*) {
    count(req, FuseRequest::Releasedir);
    fuse_reply_err(req, 0);
}

// Directory offsets: 1 is ".", 2 is "..", 3 + i is the i-th child.
void read_directory(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
    answer(req, [&] {
        const Filesystem& fs = filesystem_of(req);
        const auto dir = fs.engine.tree().node_of(ino);
        if (!dir) return (void)fuse_reply_err(req, ENOENT);
        // Reused: the kernel asks for up to 1 MiB, mostly to answer a few entries.
        thread_local std::vector<char> buffer;
        if (buffer.size() < size) buffer.resize(size);
        std::size_t used = 0;
        const std::size_t children = fs.engine.tree().child_count(*dir);
        for (std::uint64_t next = static_cast<std::uint64_t>(off); next < 2 + children; ++next) {
            Node node;
            std::string_view name;
            if (next < 2) {
                node = next == 0 ? *dir : fs.engine.tree().parent_of(*dir);
                name = next == 0 ? "." : "..";
            } else {
                const DirEntry entry = fs.engine.tree().child(*dir, next - 2);
                node = entry.node;
                name = entry.name;
            }
            const std::string name_z(name);
            const off_t entry_off = static_cast<off_t>(next + 1);
            std::size_t wanted;
            if (plus) {
                const fuse_entry_param entry = entry_of(fs, node);
                wanted = fuse_add_direntry_plus(req, buffer.data() + used, size - used, name_z.c_str(), &entry,
                                                entry_off);
            } else {
                const struct stat st = attributes_of(fs, node);
                wanted = fuse_add_direntry(req, buffer.data() + used, size - used, name_z.c_str(), &st, entry_off);
            }
            if (wanted > size - used) break;
            used += wanted;
        }
        count_reply(fs, fuse_reply_buf(req, buffer.data(), used));
    });
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
    count(req, FuseRequest::Readdir);
    read_directory(req, ino, size, off, false);
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
    count(req, FuseRequest::Readdirplus);
    read_directory(req, ino, size, off, true);
}

void op_statfs(fuse_req_t req, fuse_ino_t) {
    count(req, FuseRequest::Statfs);
    const Filesystem& fs = filesystem_of(req);
    struct statvfs st {};
    st.f_bsize = 4096;
    st.f_frsize = 4096;
    st.f_blocks = (fs.total_bytes + 4095) / 4096;
    st.f_files = 2 + fs.engine.tree().child_count(Node{NodeKind::Root}) + fs.engine.tree().tensor_count() * 6;
    st.f_namemax = 255;
    st.f_flag = ST_RDONLY;
    count_reply(fs, fuse_reply_statfs(req, &st));
}

// No extended attributes and no access checks of our own (the mode bits say it all): ENOSYS tells the kernel not
// to ask again. Answered here only to be counted.
void op_getxattr(fuse_req_t req, fuse_ino_t, const char*, size_t) {
    count(req, FuseRequest::Getxattr);
    fuse_reply_err(req, ENOSYS);
}
void op_listxattr(fuse_req_t req, fuse_ino_t, size_t) {
    count(req, FuseRequest::Listxattr);
    fuse_reply_err(req, ENOSYS);
}
void op_access(fuse_req_t req, fuse_ino_t, int) {
    count(req, FuseRequest::Access);
    fuse_reply_err(req, ENOSYS);
}

// Everything that would change the tree.
void refuse(fuse_req_t req) {
    count(req, FuseRequest::Refused);
    fuse_reply_err(req, EROFS);
}
void refuse_setattr(fuse_req_t req, fuse_ino_t, struct stat*, int, fuse_file_info*) { refuse(req); }
void refuse_mknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { refuse(req); }
void refuse_mkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) { refuse(req); }
void refuse_unlink(fuse_req_t req, fuse_ino_t, const char*) { refuse(req); }
void refuse_symlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { refuse(req); }
void refuse_rename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned) { refuse(req); }
void refuse_link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { refuse(req); }
void refuse_write(fuse_req_t req, fuse_ino_t, const char*, size_t, off_t, fuse_file_info*) { refuse(req); }
void refuse_create(fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) { refuse(req); }
void refuse_setxattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) { refuse(req); }
void refuse_removexattr(fuse_req_t req, fuse_ino_t, const char*) { refuse(req); }
void refuse_fallocate(fuse_req_t req, fuse_ino_t, int, off_t, off_t, fuse_file_info*) { refuse(req); }

fuse_lowlevel_ops make_operations() {
    fuse_lowlevel_ops ops{};
    ops.init = op_init;
    ops.lookup = op_lookup;
    ops.forget = op_forget;
    ops.forget_multi = op_forget_multi;
    ops.getattr = op_getattr;
    ops.open = op_open;
    ops.read = op_read;
    ops.release = op_release;
    ops.opendir = op_opendir;
    ops.readdir = op_readdir;
    ops.readdirplus = op_readdirplus;
    ops.releasedir = op_releasedir;
    ops.statfs = op_statfs;
    ops.getxattr = op_getxattr;
    ops.listxattr = op_listxattr;
    ops.access = op_access;
    ops.setattr = refuse_setattr;
    ops.mknod = refuse_mknod;
    ops.mkdir = refuse_mkdir;
    ops.unlink = refuse_unlink;
    ops.rmdir = refuse_unlink;
    ops.symlink = refuse_symlink;
    ops.rename = refuse_rename;
    ops.link = refuse_link;
    ops.write = refuse_write;
    ops.create = refuse_create;
    ops.setxattr = refuse_setxattr;
    ops.removexattr = refuse_removexattr;
    ops.fallocate = refuse_fallocate;
    return ops;
}

}  // namespace

const fuse_lowlevel_ops& tensorfs_operations() {
    static const fuse_lowlevel_ops ops = make_operations();
    return ops;
}

}  // namespace tensorfs
