// The bytes of one block of a remote object, shared by its readers, the memory of recent blocks and the disk
// cache's writer. Each block has a buffer of its own (a range's answer is written across them): memory counted
// per block is the memory held.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace tensorfs::remote {

// The unit of the disk cache and of the memory of recent blocks (the last block of an object may be shorter).
inline constexpr std::size_t kBlockBytes = std::size_t{1} << 20;
// A range request of the read-ahead asks for up to kRangeBytes (several blocks). See docs/benchmarks.md, section
// "load", for the measurements behind them.
inline constexpr std::size_t kRangeBytes = std::size_t{8} << 20;

// How many blocks an object of `size` bytes has, and how long its block `index` is.
inline std::uint64_t block_count(std::uint64_t size) { return (size + kBlockBytes - 1) / kBlockBytes; }
inline std::size_t block_length(std::uint64_t size, std::uint64_t index) {
    return static_cast<std::size_t>(std::min<std::uint64_t>(kBlockBytes, size - index * kBlockBytes));
}

struct Block {
    std::shared_ptr<const char[]> storage;  // the buffer the bytes are in
    std::size_t length = 0;
    std::uint64_t serial = 0;  // which block of which object it is (RemoteContext's key)
    std::uint64_t index = 0;
    // Where the block is held, for the memory budget (RemoteContext, under its mutex): a block both kept for
    // readers and queued for the disk counts once.
    mutable bool in_recent = false;
    mutable bool queued_for_disk = false;

    const char* bytes() const { return storage.get(); }
};
using BlockPtr = std::shared_ptr<const Block>;

// Bytes [begin, begin + bytes.size()) of one block: what an exact read fetched of it, kept so that fetching the
// block whole later asks only for the rest.
struct Piece {
    std::size_t begin = 0;
    std::string bytes;

    std::size_t end() const { return begin + bytes.size(); }
};

// Bytes [from, from + length) of one block, for `out`: a read's part of the block.
struct BlockPart {
    std::size_t from;
    std::size_t length;
    char* out;
};

// Two pieces of one block as one: their union when they overlap or touch, else the longer one.
inline Piece merged(Piece a, Piece b) {
    if (b.begin < a.begin) std::swap(a, b);
    if (b.begin > a.end()) return a.bytes.size() >= b.bytes.size() ? std::move(a) : std::move(b);
    if (b.end() > a.end()) a.bytes.append(b.bytes, a.end() - b.begin, std::string::npos);
    return a;
}

}  // namespace tensorfs::remote
