// The open source files of a mounted catalog. Descriptors are opened once, at mount, so the mount keeps serving
// the bytes it was mounted with when a file is later renamed over or deleted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensorfs/catalog.hpp"

namespace tensorfs {

class SourceFiles {
public:
    // Opens every file of the catalog read-only. Throws InvalidSource if one cannot be opened.
    explicit SourceFiles(const Catalog& catalog);
    ~SourceFiles();
    SourceFiles(const SourceFiles&) = delete;
    SourceFiles& operator=(const SourceFiles&) = delete;

    int fd(std::uint32_t file) const { return fds_[file]; }

    // Reads exactly `length` bytes at `offset` of file `file` into `dst`; throws IoError on a short read or error.
    void read_exact(std::uint32_t file, std::uint64_t offset, std::size_t length, void* dst) const;

private:
    std::vector<int> fds_;
    std::vector<std::string> paths_;
};

}  // namespace tensorfs
