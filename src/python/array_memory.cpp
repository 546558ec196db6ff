#include "array_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <mutex>
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
    const std::size_t length = (bytes + page - 1) / page * page;
    char* at = mappings().take(length);
    if (at == nullptr) return nullptr;
    return std::shared_ptr<char>(at, [length](char* memory) { mappings().give_back(memory, length); });
}

}  // namespace tensorfs::python
