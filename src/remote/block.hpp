// The bytes of one block of a remote object, shared by its readers, the memory of recent blocks and the disk
// cache's writer.
#pragma once

#include <cstddef>
#include <memory>

namespace tensorfs::remote {

struct Block {
    std::unique_ptr<char[]> bytes;
    std::size_t length = 0;
};
using BlockPtr = std::shared_ptr<const Block>;

}  // namespace tensorfs::remote
