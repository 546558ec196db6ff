// Zip archives and PyTorch checkpoints written on the fly for the unit tests (PKWARE APPNOTE 6.3), with the knobs
// the rule tests turn: ZIP64 records, a comment, the method and flags of an entry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/crc32.hpp"

namespace tensorfs::test {

struct ZipEntrySpec {
    std::string name;
    std::string data;
    std::uint16_t method = 0;  // written as given; the bytes are always `data` as they are
    std::uint16_t flags = 0;
};

inline void put16(std::string& out, std::uint16_t v) {
    out += static_cast<char>(v & 0xFF);
    out += static_cast<char>(v >> 8);
}
inline void put32(std::string& out, std::uint32_t v) {
    put16(out, static_cast<std::uint16_t>(v & 0xFFFF));
    put16(out, static_cast<std::uint16_t>(v >> 16));
}
inline void put64(std::string& out, std::uint64_t v) {
    put32(out, static_cast<std::uint32_t>(v & 0xFFFFFFFF));
    put32(out, static_cast<std::uint32_t>(v >> 32));
}

// Local headers and bytes, the central directory, then the end records (ZIP64 ones when `zip64`: every entry's
// sizes and offset are then 0xFFFFFFFF with the values in its ZIP64 extra field).
inline std::string zip_bytes(const std::vector<ZipEntrySpec>& entries, bool zip64 = false,
                             const std::string& comment = "") {
    std::string out;
    std::vector<std::uint64_t> offsets;
    for (const ZipEntrySpec& entry : entries) {
        offsets.push_back(out.size());
        put32(out, 0x04034B50);
        put16(out, 20);
        put16(out, entry.flags);
        put16(out, entry.method);
        put32(out, 0);
        put32(out, crc32(entry.data));
        put32(out, static_cast<std::uint32_t>(entry.data.size()));
        put32(out, static_cast<std::uint32_t>(entry.data.size()));
        put16(out, static_cast<std::uint16_t>(entry.name.size()));
        put16(out, 0);
        out += entry.name + entry.data;
    }
    const std::uint64_t directory_offset = out.size();
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const ZipEntrySpec& entry = entries[i];
        std::string extra;
        if (zip64) {
            put16(extra, 1);
            put16(extra, 24);
            put64(extra, entry.data.size());
            put64(extra, entry.data.size());
            put64(extra, offsets[i]);
        }
        put32(out, 0x02014B50);
        put16(out, 45);
        put16(out, 45);
        put16(out, entry.flags);
        put16(out, entry.method);
        put32(out, 0);
        put32(out, crc32(entry.data));
        put32(out, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(entry.data.size()));
        put32(out, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(entry.data.size()));
        put16(out, static_cast<std::uint16_t>(entry.name.size()));
        put16(out, static_cast<std::uint16_t>(extra.size()));
        put16(out, 0);
        put16(out, 0);
        put16(out, 0);
        put32(out, 0);
        put32(out, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(offsets[i]));
        out += entry.name + extra;
    }
    const std::uint64_t directory_size = out.size() - directory_offset;
    if (zip64) {
        const std::uint64_t end64 = out.size();
        put32(out, 0x06064B50);
        put64(out, 44);
        put16(out, 45);
        put16(out, 45);
        put32(out, 0);
        put32(out, 0);
        put64(out, entries.size());
        put64(out, entries.size());
        put64(out, directory_size);
        put64(out, directory_offset);
        put32(out, 0x07064B50);
        put32(out, 0);
        put64(out, end64);
        put32(out, 1);
    }
    put32(out, 0x06054B50);
    put16(out, 0);
    put16(out, 0);
    put16(out, zip64 ? 0xFFFF : static_cast<std::uint16_t>(entries.size()));
    put16(out, zip64 ? 0xFFFF : static_cast<std::uint16_t>(entries.size()));
    put32(out, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(directory_size));
    put32(out, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(directory_offset));
    put16(out, static_cast<std::uint16_t>(comment.size()));
    return out + comment;
}

// Pickle pieces for checkpoints (protocol 2 opcodes).
inline std::string pickle_text(const std::string& text) {
    std::string out = "X";
    put32(out, static_cast<std::uint32_t>(text.size()));
    return out + text;
}
inline std::string pickle_global(const std::string& module, const std::string& name) {
    return "c" + module + "\n" + name + "\n";
}
inline std::string pickle_small_int(unsigned value) { return std::string("K") + static_cast<char>(value); }
inline std::string pickle_tuple(const std::vector<std::string>& items) {
    std::string out = "(";
    for (const auto& item : items) out += item;
    return out + "t";
}
// _rebuild_tensor_v2 of storage KEY (NUMEL elements of CLASS) with `shape` and `stride` (small numbers).
inline std::string pickle_tensor(const std::string& key, unsigned numel, const std::vector<unsigned>& shape,
                                 const std::vector<unsigned>& stride, unsigned offset = 0,
                                 const std::string& cls = "FloatStorage") {
    std::vector<std::string> dims, steps;
    for (unsigned d : shape) dims.push_back(pickle_small_int(d));
    for (unsigned d : stride) steps.push_back(pickle_small_int(d));
    const std::string storage = pickle_tuple({pickle_text("storage"), pickle_global("torch", cls), pickle_text(key),
                                              pickle_text("cpu"), pickle_small_int(numel)}) + "Q";
    return pickle_global("torch._utils", "_rebuild_tensor_v2") +
           pickle_tuple({storage, pickle_small_int(offset), pickle_tuple(dims), pickle_tuple(steps), "\x89", "}"}) +
           "R";
}
// A dict pickle of (key pickle, value pickle) pairs.
inline std::string pickle_dict(const std::vector<std::pair<std::string, std::string>>& items) {
    std::string out = "}(";
    for (const auto& [key, value] : items) out += key + value;
    return out + "u";
}
inline std::string pickle_of(const std::string& body) { return std::string("\x80\x02", 2) + body + "."; }

// A torch.save archive: ARCHIVE/data.pkl, ARCHIVE/data/KEY for each storage, ARCHIVE/version.
inline std::string checkpoint_bytes(const std::string& data_pkl,
                                    const std::vector<std::pair<std::string, std::string>>& storages,
                                    const std::string& version = "3\n") {
    std::vector<ZipEntrySpec> entries{{"archive/data.pkl", data_pkl}};
    for (const auto& [key, data] : storages) entries.push_back({"archive/data/" + key, data});
    if (!version.empty()) entries.push_back({"archive/version", version});
    return zip_bytes(entries);
}

}  // namespace tensorfs::test
