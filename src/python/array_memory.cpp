#include "array_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <vector>

namespace tensorfs::python {
namespace {

// Released memory kept for reuse, at most: a few of a large model's largest tensors (it stays resident).
constexpr std::size_t kKeptBytes = std::size_t{1} << 30;

class Mappings {
public:
    char* take(std::size_t length) {
        {
            const std::lock_guard lock(mutex_);
            for (auto kept = kept_.begin(); kept != kept_.end(); ++kept) {
                if (kept->length != length) continue;
                char* at = kept->at;
                kept_bytes_ -= length;
                kept_.erase(kept);
                return at;
            }
        }
        void* at = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (at == MAP_FAILED) return nullptr;
        ::madvise(at, length, MADV_NOHUGEPAGE);
        // Every page of the array is written soon: mapped in one call, not one page fault each (the array's first
        // write ran 1.7x faster so on this machine's VM: docs/benchmarks.md). Before Linux 5.14 the call fails and
        // the pages are faulted in as written.
        ::madvise(at, length, MADV_POPULATE_WRITE);
        return static_cast<char*>(at);
    }

    std::size_t release() {
        std::vector<Kept> kept;
        {
            const std::lock_guard lock(mutex_);
            kept.swap(kept_);
            kept_bytes_ = 0;
        }
        std::size_t bytes = 0;
        for (const Kept& mapping : kept) {
            ::munmap(mapping.at, mapping.length);
            bytes += mapping.length;
        }
        return bytes;
    }

    void give_back(char* at, std::size_t length) {
        {
            const std::lock_guard lock(mutex_);
            if (kept_bytes_ + length <= kKeptBytes) {
                kept_.push_back(Kept{at, length});
                kept_bytes_ += length;
                return;
            }
        }
        ::munmap(at, length);
    }

private:
    struct Kept {
        char* at;
        std::size_t length;
    };
    std::mutex mutex_;
    std::vector<Kept> kept_;
    std::size_t kept_bytes_ = 0;
};

// Never destroyed: arrays may be released after the module's statics are gone (at the interpreter's exit).
Mappings& mappings() {
    static auto* process = new Mappings;
    return *process;
}

}  // namespace

std::shared_ptr<char> array_memory(std::size_t bytes) {
    static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    if (bytes >= kLargeArray) {
        const std::size_t length = (bytes + page - 1) / page * page;
        if (char* at = mappings().take(length)) {
            return std::shared_ptr<char>(at, [length](char* memory) { mappings().give_back(memory, length); });
        }
    }
    // At least one byte: an empty array still has an address.
    constexpr std::align_val_t kAlignment{64};
    auto* at = static_cast<char*>(::operator new(std::max<std::size_t>(bytes, 1), kAlignment));
    return std::shared_ptr<char>(at, [](char* memory) { ::operator delete(memory, kAlignment); });
}

std::size_t release_kept_memory() { return mappings().release(); }

}  // namespace tensorfs::python
