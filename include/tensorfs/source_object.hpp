// Where the bytes of a source come from. Parsers and the mount read files only through these two interfaces,
// so a file on the local disk, on a web server or in an object store gives the same catalog and the same bytes:
// each kind of storage is one implementation of them.
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tensorfs {

// An open file descriptor, closed with its owner (moved, never copied).
class OpenFile {
public:
    explicit OpenFile(int fd) : fd_(fd) {}
    ~OpenFile();
    OpenFile(OpenFile&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    OpenFile& operator=(OpenFile&&) = delete;
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;

    int fd() const { return fd_; }

private:
    int fd_;
};

// One file of a source, opened: its size and identity are fixed when it is opened, and every read is checked
// against them.
class SourceObject {
public:
    SourceObject(std::string name, std::uint64_t size, timespec modified)
        : name_(std::move(name)), size_(size), modified_(modified) {}
    virtual ~SourceObject() = default;
    SourceObject(const SourceObject&) = delete;
    SourceObject& operator=(const SourceObject&) = delete;

    // How messages name it: the path as given, or the URL (never with credentials).
    const std::string& name() const { return name_; }
    std::uint64_t size() const { return size_; }
    // When it was last changed, as the tree shows it (st_mtime).
    const timespec& modified() const { return modified_; }

    // Reads exactly `length` bytes at `offset` (inside size()) into `dst`. Throws IoError(name(), reason) when
    // they cannot be read: the file shrank or changed since it was opened, or an I/O or network error.
    virtual void read(std::uint64_t offset, std::size_t length, void* dst) const = 0;

    // read(), for a read that is part of a stream a reader may go on reading in order (a tensor's bytes, a file the
    // tree shows whole): an object that reads ahead of sequential readers follows it. Local files just read.
    virtual void read_following(std::uint64_t offset, std::size_t length, void* dst) const;

    // Runs of bytes spread over a part of the file, each read to its own place: the parts of a tensor's rows that a
    // slice selects. In the order of their offsets, none overlapping another, each inside size(). A remote object
    // fetches the whole blocks that hold runs lying close together (a column slice touches every row: one range for
    // many rows, and each block once across the processes that share the disk cache, never a range per row), and
    // exactly the bytes of a run on its own, as read(); a local file reads each run. Throws IoError as read() does.
    struct Run {
        std::uint64_t offset;
        std::size_t length;
        void* dst;
    };
    virtual void read_runs(std::span<const Run> runs) const;

    // The bytes [offset, offset + length) in a read-only mapping, for a reply the kernel copies straight from the
    // page cache; never to be read by this process (a file truncated since raises SIGBUS there, whereas the kernel
    // only fails the copy). nullptr when the range is not mapped (remote objects, files that cannot be mapped):
    // use read() then. Throws IoError when the file is now shorter than offset + length.
    virtual const char* mapped(std::uint64_t offset, std::size_t length) const;

    // Copies [offset, offset + length) into `dst` only if every byte is in the page cache already (no waiting for
    // the disk or the network) and says whether it did; false also for any error, which read() then meets.
    // Remote objects: always false.
    virtual bool read_if_cached(std::uint64_t offset, std::size_t length, void* dst) const;

    // Tells that a mapped range was copied and its pages need not stay in this process's page tables.
    virtual void forget_mapped(std::uint64_t offset, std::size_t length) const;

    // Where the first of bytes [offset, offset + length) lie in another local file already (a remote object's block
    // in its disk cache): that file, open, where in it they begin and how many of them it holds (at least one, at
    // most `length`), checked to be there. For a reply the kernel splices from that file's page cache, with no copy
    // in this process. Counts as a read of those bytes by read_following (read-ahead, the cache's use). nullopt when
    // the first byte lies elsewhere: read it then.
    struct FileSpan {
        OpenFile file;
        std::uint64_t offset;
        std::size_t length;
    };
    virtual std::optional<FileSpan> cached_span(std::uint64_t offset, std::size_t length) const;

    // Brings bytes [offset, offset + length) into the disk cache ahead of any reader (`tensorfs prefetch`), with as
    // many requests in flight as the source's max_connections, and returns once they are written. `progress` is
    // told of the bytes done (fetched, or found cached), from several threads. Returns the bytes fetched: 0 when
    // all were cached already, and always for a local file. Throws IoError.
    using Progress = std::function<void(std::uint64_t bytes)>;
    virtual std::uint64_t fill_cache(std::uint64_t offset, std::uint64_t length, const Progress& progress) const;

    // What a whole file was checked against: the checksum its source publishes for it, as messages name it ("the
    // Hub's LFS sha256", "x-amz-checksum-sha256", "the ETag's MD5"), and whether the file's bytes match it.
    struct ChecksumCheck {
        std::string checksum;
        bool matches = false;
    };
    // Reads the whole file and compares it with the checksum its source publishes for it. nullopt when the source
    // publishes none. Throws IoError when the file or its checksum cannot be read.
    virtual std::optional<ChecksumCheck> check_published_checksum() const;

    // Drops this file's bytes from the disk cache (a checksum that did not match).
    virtual void evict_cached() const;

    // A private (copy-on-write) mapping of the whole file, for handing its bytes to a reader as memory of its own
    // without a copy (the Python module's arrays): its pages are the page cache's until written, and a write stays in
    // this process's copy, never reaching the file. It stays mapped while the pointer or a copy of it lives. Like any
    // mapping of the file, reading it past the end of a file truncated since raises SIGBUS. nullptr when the file
    // cannot be mapped (remote objects, empty files).
    virtual std::shared_ptr<char> map_copy_on_write() const;

private:
    std::string name_;
    std::uint64_t size_;
    timespec modified_;
};

// A folder that holds the files of a source: a local folder, the folder of a URL, a folder of a Hub repo, an S3
// prefix. Files are named by '/'-separated paths relative to it, which the callers keep inside it (no "..").
class SourceFolder {
public:
    virtual ~SourceFolder() = default;

    // How messages name this folder, and the file `relative` in it (paths, or URLs without credentials).
    virtual std::string name() const = 0;
    virtual std::string name_of(const std::string& relative) const = 0;

    // The file `relative`, opened; nullptr when the folder has no such file. Throws SourceError naming it when
    // it exists but cannot be opened (no permission, not a regular file, a server error).
    virtual std::shared_ptr<const SourceObject> open_if_exists(const std::string& relative) const = 0;

    // The names of the regular files directly in this folder, sorted. Throws SourceError when the folder cannot
    // be listed (a plain web server has no listing).
    virtual std::vector<std::string> list() const = 0;

    // Every regular file under this folder, its subfolders' too: '/'-separated paths relative to it, sorted. Throws
    // SourceError when the folder cannot be listed, as list() does.
    virtual std::vector<std::string> list_all() const = 0;

    // How many files are best opened and read at once: headers of many shards are read in parallel, and a remote
    // store hides its latency with more requests in flight than a local disk has cores to parse with.
    virtual unsigned parallel_reads() const = 0;

    // How a missing file is told in messages: "no such file" here, the server's words for remote folders.
    virtual std::string missing(const std::string& relative) const;

    // open_if_exists, with a missing file refused as missing() says.
    std::shared_ptr<const SourceObject> open(const std::string& relative) const;
};

// What a SOURCE names: a folder, or one file in it.
struct SourceLocation {
    std::unique_ptr<SourceFolder> folder;
    std::string file;  // empty: the folder itself
};

}  // namespace tensorfs
