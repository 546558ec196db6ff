// The directory of a zip archive (PKWARE APPNOTE 6.3): the end of central directory record, its ZIP64 version
// for archives past 4 GiB or 65535 entries, the central directory, and each entry's local file header. Only the
// directory is read, with bounded reads; entries' bytes stay in the file for their readers to take.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensorfs/source_object.hpp"

namespace tensorfs::zip {

struct Entry {
    std::string name;
    std::uint16_t flags = 0;
    std::uint16_t method = 0;  // 0: stored; 8: deflated...
    std::uint32_t crc32 = 0;
    std::uint64_t compressed_size = 0;
    std::uint64_t size = 0;
    std::uint64_t header_offset = 0;  // its local file header
    std::uint64_t data_offset = 0;    // its bytes, after the local header, name and extra field
    std::uint64_t record_offset = 0;  // its central directory record

    bool stored() const { return method == 0; }
};

// Reads and checks the directory of `file`: end records where they say, every central directory record whole,
// no name twice, each local header where the central directory puts it and naming the same entry, and entries
// that neither overlap each other nor the central directory. Local headers are read with up to
// `parallel_reads` reads in flight. Throws SourceError naming the file (at the byte that breaks a rule).
std::vector<Entry> read_directory(const SourceObject& file, unsigned parallel_reads);

// A human name of a compression method ("deflate"), for messages.
std::string method_name(std::uint16_t method);

// The bytes of a stored entry of at most `max_bytes`, checked against its CRC-32. Throws SourceError naming the
// file and `what` the entry is ("the pickle").
std::string read_stored_entry(const SourceObject& file, const Entry& entry, std::uint64_t max_bytes,
                              std::string_view what);

}  // namespace tensorfs::zip
