// The files of a mounted catalog, by index: the objects its parsers opened, read for tensors' bytes. They stay
// open as long as the mount, so it keeps serving the bytes it was mounted with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensorfs/catalog.hpp"

namespace tensorfs {

class SourceFiles {
public:
    explicit SourceFiles(const Catalog& catalog);

    const SourceObject& file(std::uint32_t index) const { return *files_[index]; }

    // Reads exactly `length` bytes at `offset` of file `file` into `dst`; throws IoError on a short read or error.
    void read_exact(std::uint32_t file, std::uint64_t offset, std::size_t length, void* dst) const {
        files_[file]->read(offset, length, dst);
    }

    // The same for bytes of `tensor`, so that a remote file reads ahead only inside that tensor's bytes.
    void read_of_tensor(const Tensor& tensor, std::uint64_t offset, std::size_t length, void* dst) const {
        files_[tensor.file]->read_in_region(offset, length, dst, tensor.offset, tensor.offset + tensor.nbytes);
    }

    // SourceObject::mapped and forget_mapped of file `file`.
    const char* mapped(std::uint32_t file, std::uint64_t offset, std::size_t length) const {
        return files_[file]->mapped(offset, length);
    }
    void forget_mapped(std::uint32_t file, std::uint64_t offset, std::size_t length) const {
        files_[file]->forget_mapped(offset, length);
    }

private:
    std::vector<const SourceObject*> files_;  // owned by the catalog
};

}  // namespace tensorfs
