// Notes for `ls` and `info` when the SOURCE given is likely not what the user meant to describe.
#pragma once

#include <string>

namespace tensorfs::cli {

// The SOURCE to describe for `source` as given: for a tensorfs mount point, the mount's own SOURCE (never the
// mount's model.safetensors), with a note on stderr saying so; otherwise `source` itself, with a note on stderr
// when it names one shard of a sharded set (NAME-0000K-of-0000N.safetensors or .bin), pointing to the index or the
// folder that holds the whole model.
std::string source_to_describe(const std::string& source);

}  // namespace tensorfs::cli
