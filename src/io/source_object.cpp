#include "tensorfs/source_object.hpp"

#include <unistd.h>

#include "tensorfs/errors.hpp"

namespace tensorfs {

OpenFile::~OpenFile() {
    if (fd_ >= 0) ::close(fd_);
}

void SourceObject::read_following(std::uint64_t offset, std::size_t length, void* dst) const {
    read(offset, length, dst);
}

void SourceObject::read_runs(std::span<const Run> runs) const {
    for (const Run& run : runs) read(run.offset, run.length, run.dst);
}

const char* SourceObject::mapped(std::uint64_t, std::size_t) const { return nullptr; }

bool SourceObject::read_if_cached(std::uint64_t, std::size_t, void*) const { return false; }

void SourceObject::forget_mapped(std::uint64_t, std::size_t) const {}

std::optional<SourceObject::FileSpan> SourceObject::cached_span(std::uint64_t, std::size_t) const {
    return std::nullopt;
}

std::uint64_t SourceObject::fill_cache(std::uint64_t, std::uint64_t length, const Progress& progress) const {
    if (progress) progress(length);
    return 0;
}

std::optional<SourceObject::ChecksumCheck> SourceObject::check_published_checksum() const { return std::nullopt; }

void SourceObject::evict_cached() const {}

std::shared_ptr<char> SourceObject::map_copy_on_write() const { return nullptr; }

std::string SourceFolder::missing(const std::string&) const { return "no such file"; }

std::shared_ptr<const SourceObject> SourceFolder::open(const std::string& relative) const {
    auto object = open_if_exists(relative);
    if (object == nullptr) {
        Problems problems;
        problems.add_missing(name_of(relative), missing(relative));
        problems.throw_if_any();
    }
    return object;
}

}  // namespace tensorfs
