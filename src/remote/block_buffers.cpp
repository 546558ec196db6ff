#include "block_buffers.hpp"

#include <sys/mman.h>

#include <new>

namespace tensorfs::remote {
namespace {

char* map_buffer(std::size_t length) {
    void* mapped = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    return static_cast<char*>(mapped);
}

}  // namespace

BlockBuffers::BlockBuffers(std::size_t buffer_bytes, std::size_t kept_bytes)
    : buffer_bytes_(buffer_bytes), most_kept_(buffer_bytes == 0 ? 0 : kept_bytes / buffer_bytes) {}

BlockBuffers::~BlockBuffers() {
    for (char* buffer : kept_) ::munmap(buffer, buffer_bytes_);
}

std::shared_ptr<char[]> BlockBuffers::take(std::size_t length) {
    char* buffer = nullptr;
    if (length == buffer_bytes_) {
        const std::lock_guard lock(mutex_);
        if (!kept_.empty()) {
            buffer = kept_.back();
            kept_.pop_back();
        }
    }
    if (buffer == nullptr) buffer = map_buffer(length);
    // Should making the shared pointer fail, it gives the buffer back itself (through the deleter).
    return std::shared_ptr<char[]>(buffer, [pool = shared_from_this(), length](char* given) {
        pool->give_back(given, length);
    });
}

void BlockBuffers::give_back(char* buffer, std::size_t length) {
    if (length == buffer_bytes_) {
        const std::lock_guard lock(mutex_);
        if (kept_.size() < most_kept_) {
            kept_.push_back(buffer);
            return;
        }
    }
    ::munmap(buffer, length);
}

}  // namespace tensorfs::remote
