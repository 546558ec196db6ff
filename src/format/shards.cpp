#include "shards.hpp"

#include <algorithm>

#include "tensorfs/in_parallel.hpp"

namespace tensorfs {

std::vector<Shard> read_shards(const SourceFolder& folder, const std::vector<std::string>& names,
                               const FileReader& reader) {
    std::vector<Shard> shards(names.size());
    // The files are read in parallel, and each file's reader may read in parallel too: share the reads in flight.
    const unsigned parallel = std::max(1u, folder.parallel_reads());
    const auto files_at_once = static_cast<unsigned>(std::clamp<std::size_t>(names.size(), 1, parallel));
    const unsigned per_file = std::max(1u, parallel / files_at_once);
    in_parallel(names.size(), parallel, [&](std::size_t index) {
        Shard& shard = shards[index];
        shard.name = names[index];
        try {
            shard.file = folder.open_if_exists(shard.name);
            if (shard.file != nullptr) shard.contents = reader(*shard.file, per_file, shard.problems);
        } catch (const SourceError& invalid) {
            shard.problems.add_all(invalid);
        }
    });
    return shards;
}

}  // namespace tensorfs
