// Sources on the local disk: a folder, and the files in it opened with a descriptor and a read-only mapping.
#pragma once

#include <filesystem>

#include "tensorfs/source_object.hpp"

namespace tensorfs {

class LocalFolder : public SourceFolder {
public:
    // `path` may be empty for the working directory; names keep its spelling ("a/b" names "a/b/x.gguf").
    explicit LocalFolder(std::filesystem::path path) : path_(std::move(path)) {}

    std::string name() const override { return path_.string(); }
    std::string name_of(const std::string& relative) const override;
    std::shared_ptr<const SourceObject> open_if_exists(const std::string& relative) const override;
    std::vector<std::string> list() const override;
    std::vector<std::string> list_all() const override;
    unsigned parallel_reads() const override;

private:
    std::filesystem::path path_;
};

}  // namespace tensorfs
