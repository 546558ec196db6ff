#include "tensorfs/source_object.hpp"

#include "tensorfs/errors.hpp"

namespace tensorfs {

const char* SourceObject::mapped(std::uint64_t, std::size_t) const { return nullptr; }

void SourceObject::forget_mapped(std::uint64_t, std::size_t) const {}

std::shared_ptr<const SourceObject> SourceFolder::open(const std::string& relative) const {
    auto object = open_if_exists(relative);
    if (object == nullptr) {
        Problems problems;
        problems.add(name_of(relative), "no such file");
        problems.throw_if_any();
    }
    return object;
}

}  // namespace tensorfs
