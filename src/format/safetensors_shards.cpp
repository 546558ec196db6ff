#include "safetensors_shards.hpp"

#include "in_parallel.hpp"

namespace tensorfs::safetensors {

std::vector<ShardHeader> read_shard_headers(const SourceFolder& folder, const std::vector<std::string>& names) {
    std::vector<ShardHeader> shards(names.size());
    in_parallel(names.size(), folder.parallel_reads(), [&](std::size_t index) {
        ShardHeader& shard = shards[index];
        shard.name = names[index];
        try {
            shard.file = folder.open_if_exists(shard.name);
            if (shard.file != nullptr) shard.header = read_header(*shard.file, shard.problems);
        } catch (const InvalidSource& invalid) {
            for (const auto& problem : invalid.problems()) {
                shard.problems.add(problem.file, problem.what, problem.at_byte);
            }
        }
    });
    return shards;
}

}  // namespace tensorfs::safetensors
