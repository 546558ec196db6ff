#include "shards.hpp"

#include "in_parallel.hpp"

namespace tensorfs {

std::vector<Shard> read_shards(const SourceFolder& folder, const std::vector<std::string>& names,
                               const FileReader& reader) {
    std::vector<Shard> shards(names.size());
    in_parallel(names.size(), folder.parallel_reads(), [&](std::size_t index) {
        Shard& shard = shards[index];
        shard.name = names[index];
        try {
            shard.file = folder.open_if_exists(shard.name);
            if (shard.file != nullptr) shard.contents = reader(*shard.file, shard.problems);
        } catch (const InvalidSource& invalid) {
            for (const auto& problem : invalid.problems()) {
                shard.problems.add(problem.file, problem.what, problem.at_byte);
            }
        }
    });
    return shards;
}

}  // namespace tensorfs
