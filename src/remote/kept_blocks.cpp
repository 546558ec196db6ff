#include "kept_blocks.hpp"

#include <algorithm>
#include <cstring>

#include "tensorfs/errors.hpp"

namespace tensorfs::remote {

KeptBlocks::KeptBlocks(RemoteContext& context, const SourceObject& object, std::uint64_t serial,
                       const DiskBlocks& disk)
    : context_(context), object_(object), serial_(serial), disk_(disk) {}

bool KeptBlocks::serve(std::uint64_t index, std::span<const BlockPart> parts, Deadline deadline) const {
    if (const auto found = context_.find(serial_, index); found.valid()) {
        // Not a second wait on a silent server, for a fetch that began before it fell silent.
        if (found.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
            fail_if_silent(context_, object_.name());
        }
        if (found.wait_until(deadline) == std::future_status::timeout) {
            context_.no_answer();
            throw IoError(object_.name(),
                          "no answer within " + timeout_text(context_.timeout()) +
                              " (a fetch of these bytes is still under way)",
                          ErrorKind::TimedOut);
        }
        BlockPtr block;
        try {
            block = found.get();
        } catch (const IoError&) {
            // The fetch that had it failed: the caller fetches it again and meets the error itself.
        }
        if (block != nullptr) {
            for (const BlockPart& part : parts) std::memcpy(part.out, block->bytes() + part.from, part.length);
            if (parts.back().from + parts.back().length == block->length) context_.consumed(serial_, index);
            return true;
        }
    }
    return disk_.read(index, parts);
}

std::size_t KeptBlocks::serve_piece(std::uint64_t index, std::uint64_t from, std::size_t length, char* dst) const {
    const auto begin = static_cast<std::size_t>(from);
    if (const std::size_t served = context_.read_piece(serial_, index, begin, length, dst)) return served;
    if (!disk_.folder()) return 0;
    const std::size_t served = context_.disk().read_from_piece(*disk_.folder(), index, begin, dst, length);
    if (served > 0) context_.counters().disk_cache_hits.add(1);
    return served;
}

std::uint64_t KeptBlocks::stop_at_piece(std::uint64_t index, std::uint64_t end, std::uint64_t after) const {
    for (; index * kBlockBytes < end; ++index) {
        auto begin = context_.piece_begin(serial_, index);
        if (!begin && disk_.folder()) begin = context_.disk().piece_begin(*disk_.folder(), index);
        if (begin && index * kBlockBytes + *begin > after) return std::min(end, index * kBlockBytes + *begin);
    }
    return end;
}

std::optional<Piece> KeptBlocks::take_piece(std::uint64_t index) const {
    std::optional<Piece> in_memory = context_.take_piece(serial_, index);
    // Kept on disk by an exact read of an earlier mount or command; an exact read of this process that stopped where
    // that piece begins kept the bytes before it in memory.
    std::optional<Piece> on_disk;
    if (disk_.folder()) on_disk = context_.disk().read_piece(*disk_.folder(), index);
    Piece piece;
    if (in_memory && on_disk) {
        piece = merged(std::move(*in_memory), std::move(*on_disk));
    } else if (in_memory) {
        piece = std::move(*in_memory);
    } else if (on_disk) {
        piece = std::move(*on_disk);
    } else {
        return std::nullopt;
    }
    const std::size_t length = block_length(object_.size(), index);
    if (piece.bytes.empty() || piece.begin >= length || piece.bytes.size() > length - piece.begin) {
        return std::nullopt;  // not a piece of a block of this length
    }
    return piece;
}

std::shared_ptr<char[]> KeptBlocks::new_buffer(std::uint64_t index) const {
    return context_.block_buffer(block_length(object_.size(), index));
}

void KeptBlocks::hand_over(RemoteContext::Claim& claim, const std::vector<std::shared_ptr<char[]>>& buffers,
                           const std::vector<HeldLock>& locks, DiskWrite disk_write) const {
    const std::uint64_t first = claim.first;
    const std::size_t count = claim.promises.size();
    std::vector<BlockPtr> blocks;
    blocks.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        if (buffers[i] == nullptr) {
            blocks.emplace_back();
            continue;
        }
        auto block = std::make_shared<Block>();
        block->storage = buffers[i];
        block->length = block_length(object_.size(), first + i);
        block->serial = serial_;
        block->index = first + i;
        blocks.push_back(std::move(block));
    }
    const auto& folder = disk_.folder();
    context_.deliver(claim, blocks, folder && disk_write == DiskWrite::Later);
    // Kept on disk once its readers have it: a disk that falls behind never holds a block back from them.
    if (folder) {
        if (disk_write == DiskWrite::Later) {
            context_.disk().write_later(*folder, first, blocks, locks);
        } else {
            for (const BlockPtr& block : blocks) {
                if (block) context_.disk().write(*folder, block->index, block->bytes(), block->length);
            }
        }
        disk_.handed_over(first, count);
    }
}

void KeptBlocks::keep_fetched(std::uint64_t offset, std::size_t length, const char* bytes, DiskWrite disk_write,
                              const std::vector<HeldLock>& locks) const {
    const std::uint64_t size = object_.size();
    const std::uint64_t end = offset + length;
    const std::uint64_t first = offset / kBlockBytes;
    const auto lock_of = [&](std::uint64_t index) {
        return index - first < locks.size() ? locks[index - first] : nullptr;
    };
    for (std::uint64_t index = first; index * kBlockBytes < end;) {
        const std::uint64_t begin = index * kBlockBytes;
        const std::uint64_t from = std::max(offset, begin);
        if (from != begin || end < begin + block_length(size, index)) {
            // Part of a block: kept as a piece, in memory and in the disk cache.
            const auto part = static_cast<std::size_t>(std::min(end, begin + block_length(size, index)) - from);
            Piece piece{static_cast<std::size_t>(from - begin), std::string(bytes + (from - offset), part)};
            if (const auto& folder = disk_.folder()) {
                if (disk_write == DiskWrite::Later) {
                    context_.disk().write_piece_later(*folder, index, std::make_shared<const Piece>(piece),
                                                      lock_of(index));
                } else {
                    context_.disk().write_piece(*folder, index, piece);
                }
            }
            context_.keep_piece(serial_, index, std::move(piece));
            ++index;
            continue;
        }
        // Whole blocks: kept in memory and on disk as if fetched whole (unless someone fetches them already).
        std::uint64_t count = 1;
        std::size_t run = block_length(size, index);
        while ((index + count) * kBlockBytes < end &&
               (index + count) * kBlockBytes + block_length(size, index + count) <= end) {
            run += block_length(size, index + count);
            ++count;
        }
        RemoteContext::Claim claim = context_.claim_fetched(serial_, index, count, run);
        const std::size_t claimed = claim.promises.size();
        if (claimed > 0) {
            try {
                std::vector<std::shared_ptr<char[]>> buffers;
                std::vector<HeldLock> claimed_locks;
                for (std::size_t i = 0; i < claimed; ++i) {
                    buffers.push_back(new_buffer(index + i));
                    std::memcpy(buffers[i].get(), bytes + (begin - offset) + i * kBlockBytes,
                                block_length(size, index + i));
                    claimed_locks.push_back(lock_of(index + i));
                }
                hand_over(claim, buffers, claimed_locks, disk_write);
            } catch (...) {
                context_.give_up(claim, nullptr);
                throw;
            }
        }
        index += std::max<std::size_t>(1, claimed);
    }
}

}  // namespace tensorfs::remote
