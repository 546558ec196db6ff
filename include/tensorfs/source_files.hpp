// The open source files of a mounted catalog. Descriptors are opened (and files mapped) once, at mount, so the
// mount keeps serving the bytes it was mounted with when a file is later renamed over or deleted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensorfs/catalog.hpp"

namespace tensorfs {

class SourceFiles {
public:
    // Opens and maps every file of the catalog read-only. Throws InvalidSource if one cannot be opened.
    explicit SourceFiles(const Catalog& catalog);
    ~SourceFiles();
    SourceFiles(const SourceFiles&) = delete;
    SourceFiles& operator=(const SourceFiles&) = delete;

    int fd(std::uint32_t file) const { return files_[file].fd; }

    // Reads exactly `length` bytes at `offset` of file `file` into `dst`; throws IoError on a short read or error.
    void read_exact(std::uint32_t file, std::uint64_t offset, std::size_t length, void* dst) const;

    // The bytes [offset, offset + length) of file `file` in its read-only mapping, for the kernel to copy from
    // (a reply's buffer), never to be read by this process: if the file shrank since, touching a page past its
    // new end raises SIGBUS, whereas the kernel only fails the copy. nullptr when that range is not mapped (the
    // file could not be mapped, or is empty): use read_exact then. Throws IoError when the file is now shorter
    // than offset + length.
    const char* mapped(std::uint32_t file, std::uint64_t offset, std::size_t length) const;

    // Drops the pages of a mapped range from this process's page tables once the kernel copied them, so that
    // serving a large model does not grow the daemon's resident size (the pages stay in the page cache).
    void forget_mapped(std::uint32_t file, std::uint64_t offset, std::size_t length) const;

private:
    void close_all();

    struct OpenFile {
        int fd = -1;
        const char* mapping = nullptr;   // nullptr when empty or not mappable
        std::uint64_t mapped_size = 0;
        std::string path;
    };
    std::vector<OpenFile> files_;
};

}  // namespace tensorfs
