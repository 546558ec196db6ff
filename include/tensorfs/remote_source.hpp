// Remote SOURCEs: `http(s)://…` URLs, `hf://ORG/REPO[@REV][/PATH]` Hub addresses and `s3://BUCKET/KEY` objects,
// resolved to a folder that reads by HTTP range requests (src/remote), as a local path resolves to a LocalFolder.
#pragma once

#include <memory>
#include <string>

#include "tensorfs/source_object.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs {

// Whether SOURCE names a remote source (http://, https://, hf://, s3://) rather than a local path.
bool is_remote_source(const std::string& source);

// SOURCE as /proc/mounts and messages may show it: a URL without the user name and password it may carry.
std::string shown_source(const std::string& source);

// The folder and file of a remote SOURCE. Throws SourceError for an address that does not parse; nothing is
// fetched yet (opening files and listing the folder do that).
SourceLocation resolve_remote(const std::string& source, const SourceOptions& options);

}  // namespace tensorfs
