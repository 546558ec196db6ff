// One PyTorch checkpoint file, read without running any of it: the zip format of torch.save (PyTorch 1.6 and
// later) or its legacy format. Both give the pickle of the saved object, run by the restricted machine of
// pickle_machine.hpp, and storages that stay where they are in the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint_tensors.hpp"
#include "file_contents.hpp"
#include "pickle_machine.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::pytorch {

// Largest pickle read: real checkpoints' pickles are a few MiB (about 100 bytes per tensor).
inline constexpr std::uint64_t kMaxPickleBytes = std::uint64_t{512} << 20;

// Either format, told apart by the first bytes. The FileReader of PyTorch checkpoints.
std::optional<FileContents> read_pytorch_file(const SourceObject& file, unsigned parallel_reads, Problems& problems);

// pytorch_archive.cpp: the zip format.
std::optional<FileContents> read_archive(const SourceObject& file, unsigned parallel_reads, Problems& problems);

// pytorch_legacy.cpp: the legacy format (_use_new_zipfile_serialization=False).
std::optional<FileContents> read_legacy(const SourceObject& file, unsigned parallel_reads, Problems& problems);

// What the reading of a pickle found wrong, as a problem of `file`: `part` names the pickle in the file, and the
// pickle starts at byte `pickle_offset`.
void add_pickle_problem(Problems& problems, const SourceObject& file, const std::string& part,
                        std::uint64_t pickle_offset, const pickle::PickleError& error);

// The tensors and metadata of an unpickled checkpoint whose storages lie at `places`.
std::optional<FileContents> checkpoint_contents(const SourceObject& file, const std::string& part,
                                                const pickle::Unpickled& unpickled, std::uint64_t pickle_offset,
                                                const std::vector<StoragePlace>& places, Problems& problems);

}  // namespace tensorfs::pytorch
