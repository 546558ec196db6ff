#include "array_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace tensorfs::python {
namespace {

// Released memory kept for reuse, at most: a few of a large model's largest tensors (it stays resident).
constexpr std::size_t kKeptBytes = std::size_t{1} << 30;

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// An anonymous mapping of `length` bytes that starts on a huge page's boundary (only whole, aligned 2 MiB spans can
// be huge pages; kernels before 6.7 align no mapping, later ones only lengths that are multiples of 2 MiB): a
// mapping 2 MiB longer, trimmed at both ends. nullptr when mapping fails.
char* map_on_huge_page_boundaries(std::size_t length) {
    const std::size_t mapped = length + kHugePage;
    void* at = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (at == MAP_FAILED) return nullptr;
    char* const begin = static_cast<char*>(at);
    char* const aligned =
        reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(begin) + kHugePage - 1) & ~(kHugePage - 1));
    if (aligned != begin) ::munmap(begin, static_cast<std::size_t>(aligned - begin));
    char* const end = aligned + length;
    const std::size_t tail = static_cast<std::size_t>(begin + mapped - end);
    if (tail != 0) ::munmap(end, tail);
    return aligned;
}

// Whether the kernel gives transparent huge pages to a mapping that asks for them ("always" or "madvise").
bool transparent_huge_pages() {
    static const bool enabled = [] {
        std::ifstream setting("/sys/kernel/mm/transparent_hugepage/enabled");
        std::string text;
        std::getline(setting, text);
        return text.find("[always]") != std::string::npos || text.find("[madvise]") != std::string::npos;
    }();
    return enabled;
}

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
        char* at = map_on_huge_page_boundaries(length);
        if (at == nullptr) return nullptr;
        if (transparent_huge_pages()) {
            // Huge pages, faulted in by the threads that write the array as they write it (512 faults a GiB, beside
            // the network's transfers). The first write of this VM's memory costs per page mapped: 4 KiB pages mapped
            // ahead took a 1 GiB load 2.4-2.9 s from an uncapped server, huge pages 2.0-2.5 s; mapping the huge
            // pages ahead too (MADV_POPULATE_WRITE) made the load wait 0.4-1.9 s before its first fetch.
            ::madvise(at, length, MADV_HUGEPAGE);
        } else {
            // 4 KiB pages: mapped in one call, not one page fault each (a 1 GiB load took 2.3-2.7 s so against
            // 3.2-3.6 s). Before Linux 5.14 the call fails and the pages are faulted in as written.
            ::madvise(at, length, MADV_POPULATE_WRITE);
        }
        return at;
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
