// The folder of a URL on a plain web server: the files next to the one named (shards of an index, parts of a
// split set), by relative URL. A web server has no listing, so this folder cannot be listed.
#pragma once

#include <memory>
#include <string>

#include "remote_context.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::remote {

class UrlFolder : public SourceFolder {
public:
    // `base`: the folder's URL, ending with '/'; `query`: appended to every file's URL ("" or "?...").
    UrlFolder(std::shared_ptr<RemoteContext> context, std::string base, std::string query);

    std::string name() const override;
    std::string name_of(const std::string& relative) const override;
    std::shared_ptr<const SourceObject> open_if_exists(const std::string& relative) const override;
    std::vector<std::string> list() const override;
    std::vector<std::string> list_all() const override;
    unsigned parallel_reads() const override;
    std::string missing(const std::string& relative) const override;

private:
    std::string url_of(const std::string& relative) const;

    std::shared_ptr<RemoteContext> context_;
    std::string base_;
    std::string query_;
};

// Requests in flight while headers of many files are read: enough to hide a round trip per file.
inline constexpr unsigned kRemoteParallelReads = 32;

}  // namespace tensorfs::remote
