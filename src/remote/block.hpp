// The bytes of one block of a remote object, shared by its readers, the memory of recent blocks and the disk
// cache's writer. The blocks of one range request share its buffer (no copy to split it).
#pragma once

#include <cstddef>
#include <memory>

namespace tensorfs::remote {

struct Block {
    std::shared_ptr<const char[]> storage;  // the buffer the bytes are in, kept alive by every block in it
    const char* bytes = nullptr;
    std::size_t length = 0;
    // Where the block is held, for the memory budget (RemoteContext, under its mutex): a block both kept for
    // readers and queued for the disk counts once.
    mutable bool in_recent = false;
    mutable bool queued_for_disk = false;
};
using BlockPtr = std::shared_ptr<const Block>;

}  // namespace tensorfs::remote
