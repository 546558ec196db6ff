// Which process fetches a block of a remote object, when several that share a disk cache want it at once (the ranks
// of a job loading one model): the first to take the block's lock fetches it and holds the lock until what it fetched
// is in the disk cache; the others wait for the lock to go, then read the block from there. Each byte is fetched
// once, however many processes want it.
//
// A lock is an open file description lock (F_OFD_SETLK) on one byte of DIR/v1/.fetching: the byte of the object's
// folder (its name is a hash: its first 40 bits) and the block's index. The kernel lets go of every lock of a process
// that ends, killed or not, so a waiter never waits for a dead process: it takes the block over. Two blocks that fall
// on the same byte (the folders' first 40 bits alike) only wait for each other. The locks of one process never stand
// in each other's way (they share one open file description; its threads share fetches through RemoteContext's
// claims), so each is counted, and let go when its last holder is done.
//
// Waiting is polling (a few milliseconds apart at most): a lock cannot be waited for with a timeout, and a read waits
// no longer than its deadline. A process that waits holds a shared lock on the file's last byte meanwhile, so that the
// one it waits for writes its blocks at normal priority (someone_waits), not at the idle priority its disk cache's
// writer keeps while no one needs its writes soon: the lock goes only once the block is written.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

namespace tensorfs::remote {

class FetchLocks;

// One block's lock, held by this process while it lives.
class FetchLock {
public:
    FetchLock(FetchLocks& owner, std::uint64_t byte) : owner_(owner), byte_(byte) {}
    ~FetchLock();
    FetchLock(const FetchLock&) = delete;
    FetchLock& operator=(const FetchLock&) = delete;

private:
    FetchLocks& owner_;
    const std::uint64_t byte_;
};
// Shared by what holds the block until the disk cache has it (the fetch, the disk cache's queue); let go with the
// last copy. Null where no lock is needed (no disk cache).
using HeldLock = std::shared_ptr<const FetchLock>;

class FetchLocks {
public:
    // The locks of the disk cache in `folder` (DIR/v1), whose lock file is made at the first lock.
    explicit FetchLocks(std::filesystem::path folder);
    ~FetchLocks();
    FetchLocks(const FetchLocks&) = delete;
    FetchLocks& operator=(const FetchLocks&) = delete;

    // The lock of block `index` of the object whose blocks are in `object`, taken; nullptr when another process holds
    // it. A folder where no lock can be taken (its file system has none) takes none: every process fetches then.
    HeldLock try_lock(const std::filesystem::path& object, std::uint64_t index);

    // Whether another process holds the lock of block `index` of `object` now.
    bool held_elsewhere(const std::filesystem::path& object, std::uint64_t index);
    // Waits while another process holds it, until `deadline`: false when it still does then. True at once when none
    // does (this process's own locks do not count).
    bool wait_while_held_elsewhere(const std::filesystem::path& object, std::uint64_t index,
                                   std::chrono::steady_clock::time_point deadline);
    // Whether another process waits for a block now (any block: it may wait for one of this process's).
    bool someone_waits();

private:
    friend class FetchLock;
    // The lock file, open; -1 when it cannot be. Called with mutex_ held.
    int file();
    void unlock(std::uint64_t byte);
    // Counts a waiting thread of this process in (`waits`) or out: the first one in takes the waiters' shared lock,
    // the last one out lets go of it.
    void count_waiter(bool waits);

    const std::filesystem::path path_;
    std::mutex mutex_;
    int fd_ = -1;
    bool failed_ = false;  // the file could not be opened: no locks
    std::map<std::uint64_t, unsigned> held_;  // this process's locks, by byte: how many hold each
    unsigned waiters_ = 0;                    // this process's threads in wait_while_held_elsewhere
};

}  // namespace tensorfs::remote
