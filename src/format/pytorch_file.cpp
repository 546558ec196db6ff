#include "pytorch_file.hpp"

#include <algorithm>
#include <cstring>

#include "checkpoint_names.hpp"

namespace tensorfs::pytorch {
namespace {

// What a root that is not a dict or list is named after: the file's name without its extension
// (torch.save(tensor, "embeddings.pt") gives the tensor "embeddings").
std::string root_name_of(const std::string& path) {
    const auto slash = path.find_last_of('/');
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    const auto dot = name.find_last_of('.');
    if (dot != std::string::npos && dot > 0) name.resize(dot);
    return name;
}

}  // namespace

std::optional<FileContents> read_pytorch_file(const SourceObject& file, unsigned parallel_reads, Problems& problems) {
    char magic[4] = {};
    const std::size_t have = static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), sizeof magic));
    try {
        file.read(0, have, magic);
    } catch (const IoError& error) {
        problems.add(file.name(), std::string("cannot read: ") + error.reason(), 0);
        return std::nullopt;
    }
    // A zip archive starts with a local file header, or is an empty archive (its end record alone).
    if (have == 4 && (std::memcmp(magic, "PK\3\4", 4) == 0 || std::memcmp(magic, "PK\5\6", 4) == 0)) {
        return read_archive(file, parallel_reads, problems);
    }
    // The legacy format starts with the pickle of its magic number.
    if (have >= 1 && static_cast<unsigned char>(magic[0]) == 0x80) return read_legacy(file, parallel_reads, problems);
    problems.add(file.name(), "not a PyTorch checkpoint: neither the zip archive of torch.save nor its legacy format"
                              " (PyTorch before 0.4 wrote tar archives, which are not read)",
                 0);
    return std::nullopt;
}

void add_pickle_problem(Problems& problems, const SourceObject& file, const std::string& part,
                        std::uint64_t pickle_offset, const pickle::PickleError& error) {
    problems.add(file.name(), part + ": " + error.what(), pickle_offset + error.at());
}

std::optional<FileContents> checkpoint_contents(const SourceObject& file, const std::string& part,
                                                const pickle::Unpickled& unpickled, std::uint64_t pickle_offset,
                                                const std::vector<StoragePlace>& places, Problems& problems) {
    NamedObjects named;
    try {
        named = name_objects(unpickled.objects, unpickled.root, root_name_of(file.name()));
    } catch (const NamingError& error) {
        problems.add(file.name(), part + ": " + error.what(), pickle_offset);
        return std::nullopt;
    }
    Problems found;
    FileContents contents;
    contents.file_size = file.size();
    contents.tensors = place_tensors(unpickled.objects, named.tensors, places, file.name(), pickle_offset, found);
    contents.metadata = std::move(named.metadata);
    const bool broken = !found.empty();
    problems.add_all(std::move(found));
    if (broken) return std::nullopt;
    return contents;
}

}  // namespace tensorfs::pytorch
