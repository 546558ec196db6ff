#include "zip_directory.hpp"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "crc32.hpp"
#include "gguf_reader.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/in_parallel.hpp"

namespace tensorfs::zip {
namespace {

constexpr std::uint32_t kEndSignature = 0x06054b50;
constexpr std::uint32_t kLocatorSignature = 0x07064b50;
constexpr std::uint32_t kEnd64Signature = 0x06064b50;
constexpr std::uint32_t kCentralSignature = 0x02014b50;
constexpr std::uint32_t kLocalSignature = 0x04034b50;
constexpr std::size_t kEndBytes = 22;
constexpr std::size_t kLocatorBytes = 20;
constexpr std::size_t kEnd64Bytes = 56;
constexpr std::size_t kCentralBytes = 46;
constexpr std::size_t kLocalBytes = 30;
constexpr std::size_t kMaxComment = 0xFFFF;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
// A central directory takes about 80 bytes per entry: this is millions of entries.
constexpr std::uint64_t kMaxDirectoryBytes = std::uint64_t{256} << 20;

std::uint16_t le16(const unsigned char* at) { return static_cast<std::uint16_t>(at[0] | at[1] << 8); }
std::uint32_t le32(const unsigned char* at) {
    return static_cast<std::uint32_t>(le16(at)) | static_cast<std::uint32_t>(le16(at + 2)) << 16;
}
std::uint64_t le64(const unsigned char* at) { return le32(at) | static_cast<std::uint64_t>(le32(at + 4)) << 32; }

class DirectoryReader {
public:
    DirectoryReader(const SourceObject& file, unsigned parallel_reads)
        : file_(file), size_(file.size()), parallel_reads_(parallel_reads) {}

    std::vector<Entry> run() {
        find_end();
        read_central_directory();
        read_local_headers();
        check_no_overlap();
        return std::move(entries_);
    }

private:
    [[noreturn]] void fail(const std::string& what, std::optional<std::uint64_t> at) const {
        throw SourceError({Problem{file_.name(), what, at}});
    }

    std::string read(std::uint64_t offset, std::uint64_t length, const char* what) const {
        std::string bytes(static_cast<std::size_t>(length), '\0');
        try {
            file_.read(offset, bytes.size(), bytes.data());
        } catch (const IoError& error) {
            fail(std::string("cannot read ") + what + ": " + error.reason(), offset);
        }
        return bytes;
    }

    // The end of central directory record: the last one in the final 64 KiB + 22 bytes whose comment ends the file
    // (a comment may itself hold the signature bytes).
    void find_end() {
        const std::uint64_t tail_bytes = std::min<std::uint64_t>(size_, kEndBytes + kMaxComment);
        if (size_ < kEndBytes) {
            fail("file is " + std::to_string(size_) + " bytes, too short for a zip archive", std::nullopt);
        }
        const std::uint64_t tail_start = size_ - tail_bytes;
        const std::string tail = read(tail_start, tail_bytes, "the end of the archive");
        const auto* bytes = reinterpret_cast<const unsigned char*>(tail.data());
        std::optional<std::size_t> found;
        for (std::size_t at = tail.size() - kEndBytes + 1; at-- > 0;) {
            if (le32(bytes + at) == kEndSignature && at + kEndBytes + le16(bytes + at + 20) == tail.size()) {
                found = at;
                break;
            }
        }
        if (!found) {
            fail("no end of central directory record: not a zip archive, or one cut short", std::nullopt);
        }
        const unsigned char* end = bytes + *found;
        end_offset_ = tail_start + *found;
        const std::uint16_t disk = le16(end + 4);
        const std::uint16_t directory_disk = le16(end + 6);
        count_ = le16(end + 10);
        directory_size_ = le32(end + 12);
        directory_offset_ = le32(end + 16);
        directory_end_ = end_offset_;

        const bool has_locator =
            *found >= kLocatorBytes && le32(end - kLocatorBytes) == kLocatorSignature;
        if (has_locator) return read_zip64_end(end - kLocatorBytes, end_offset_ - kLocatorBytes);
        if (disk != 0 || directory_disk != 0) fail("archive spans several disks", end_offset_);
        if (count_ == 0xFFFF || directory_size_ == 0xFFFFFFFF || directory_offset_ == 0xFFFFFFFF) {
            fail("end of central directory record needs ZIP64 values, but there is no ZIP64 locator", end_offset_);
        }
    }

    // ZIP64: the locator right before the end record points at the ZIP64 end record, whose 64-bit fields replace
    // the 16- and 32-bit ones.
    void read_zip64_end(const unsigned char* locator, std::uint64_t locator_offset) {
        if (le32(locator + 4) != 0 || le32(locator + 16) > 1) fail("archive spans several disks", locator_offset);
        const std::uint64_t record = le64(locator + 8);
        if (record > locator_offset || locator_offset - record < kEnd64Bytes) {
            fail("ZIP64 locator points at byte " + std::to_string(record) +
                     ", where no ZIP64 end record fits before the locator",
                 locator_offset);
        }
        const std::string bytes = read(record, kEnd64Bytes, "the ZIP64 end record");
        const auto* end64 = reinterpret_cast<const unsigned char*>(bytes.data());
        if (le32(end64) != kEnd64Signature) {
            fail("ZIP64 locator points at byte " + std::to_string(record) + ", where there is no ZIP64 end record",
                 locator_offset);
        }
        if (le32(end64 + 16) != 0 || le32(end64 + 20) != 0) fail("archive spans several disks", record);
        count_ = le64(end64 + 32);
        directory_size_ = le64(end64 + 40);
        directory_offset_ = le64(end64 + 48);
        directory_end_ = record;
    }

    void read_central_directory() {
        if (directory_offset_ > directory_end_ || directory_size_ > directory_end_ - directory_offset_) {
            fail("central directory [" + std::to_string(directory_offset_) + ", +" + std::to_string(directory_size_) +
                     ") does not lie before its end record at byte " + std::to_string(directory_end_),
                 end_offset_);
        }
        if (directory_size_ > kMaxDirectoryBytes) {
            fail("central directory is " + std::to_string(directory_size_) + " bytes, over the limit of " +
                     std::to_string(kMaxDirectoryBytes),
                 directory_offset_);
        }
        if (count_ > directory_size_ / kCentralBytes) {
            fail("end record counts " + std::to_string(count_) + " entries, more than " +
                     std::to_string(directory_size_) + " bytes of central directory can hold",
                 end_offset_);
        }
        const std::string directory = read(directory_offset_, directory_size_, "the central directory");
        const auto* bytes = reinterpret_cast<const unsigned char*>(directory.data());
        entries_.reserve(static_cast<std::size_t>(count_));
        std::unordered_set<std::string_view> names;
        std::size_t at = 0;
        for (std::uint64_t i = 0; i < count_; ++i) {
            const std::uint64_t record_offset = directory_offset_ + at;
            if (directory.size() - at < kCentralBytes || le32(bytes + at) != kCentralSignature) {
                fail("central directory record " + std::to_string(i) + " is missing or cut short", record_offset);
            }
            const unsigned char* record = bytes + at;
            const std::size_t name_length = le16(record + 28);
            const std::size_t extra_length = le16(record + 30);
            const std::size_t comment_length = le16(record + 32);
            if (directory.size() - at - kCentralBytes < name_length + extra_length + comment_length) {
                fail("central directory record " + std::to_string(i) + " runs past the central directory",
                     record_offset);
            }
            Entry entry;
            entry.name.assign(directory, at + kCentralBytes, name_length);
            entry.flags = le16(record + 8);
            entry.method = le16(record + 10);
            entry.crc32 = le32(record + 16);
            entry.compressed_size = le32(record + 20);
            entry.size = le32(record + 24);
            entry.header_offset = le32(record + 42);
            entry.record_offset = record_offset;
            std::uint32_t disk = le16(record + 34);
            read_zip64_extra(entry, disk, record + kCentralBytes + name_length, extra_length);
            if (disk != 0) fail("entry " + gguf::in_quotes(entry.name) + " is on another disk", record_offset);
            if ((entry.flags & 1u) != 0) fail("entry " + gguf::in_quotes(entry.name) + " is encrypted", record_offset);
            entries_.push_back(std::move(entry));
            at += kCentralBytes + name_length + extra_length + comment_length;
        }
        for (const Entry& entry : entries_) {
            if (!names.insert(entry.name).second) {
                fail("entry " + gguf::in_quotes(entry.name) + " appears twice in the central directory",
                     entry.record_offset);
            }
        }
    }

    // The ZIP64 extended information field holds, in this order, the 64-bit values of the fields whose 32-bit
    // (16-bit for the disk) value is all ones.
    void read_zip64_extra(Entry& entry, std::uint32_t& disk, const unsigned char* extra, std::size_t length) const {
        const bool wants_size = entry.size == 0xFFFFFFFF;
        const bool wants_compressed = entry.compressed_size == 0xFFFFFFFF;
        const bool wants_offset = entry.header_offset == 0xFFFFFFFF;
        const bool wants_disk = disk == 0xFFFF;
        const std::size_t wanted = 8 * (wants_size + wants_compressed + wants_offset) + 4 * wants_disk;
        if (wanted == 0) return;
        for (std::size_t at = 0; length - at >= 4;) {
            const std::uint16_t id = le16(extra + at);
            const std::size_t field_length = le16(extra + at + 2);
            if (length - at - 4 < field_length) break;
            const unsigned char* field = extra + at + 4;
            if (id == kZip64ExtraId) {
                if (field_length < wanted) break;
                if (wants_size) entry.size = le64(field), field += 8;
                if (wants_compressed) entry.compressed_size = le64(field), field += 8;
                if (wants_offset) entry.header_offset = le64(field), field += 8;
                if (wants_disk) disk = le32(field);
                return;
            }
            at += 4 + field_length;
        }
        fail("entry " + gguf::in_quotes(entry.name) + " needs ZIP64 values that its extra field does not hold",
             entry.record_offset);
    }

    // Each local header where the central directory says, naming the same entry with the same method; the
    // entry's bytes start after the local header's own name and extra field (torch pads there to align them).
    void read_local_headers() {
        in_parallel(entries_.size(), parallel_reads_, [&](std::size_t index) {
            Entry& entry = entries_[index];
            const std::uint64_t header_bytes = kLocalBytes + entry.name.size();
            if (entry.header_offset > directory_offset_ || directory_offset_ - entry.header_offset < header_bytes) {
                fail("central directory puts entry " + gguf::in_quotes(entry.name) + " at byte " +
                         std::to_string(entry.header_offset) + ", which is not before the central directory",
                     entry.record_offset);
            }
            const std::string bytes = read(entry.header_offset, header_bytes, "a local file header");
            const auto* header = reinterpret_cast<const unsigned char*>(bytes.data());
            if (le32(header) != kLocalSignature) {
                fail("central directory puts entry " + gguf::in_quotes(entry.name) + " at byte " +
                         std::to_string(entry.header_offset) + ", where there is no local file header",
                     entry.record_offset);
            }
            const std::string_view local_name(bytes.data() + kLocalBytes,
                                              std::min<std::size_t>(le16(header + 26), entry.name.size()));
            if (le16(header + 26) != entry.name.size() || local_name != entry.name) {
                fail("the local file header at byte " + std::to_string(entry.header_offset) + " names " +
                         gguf::in_quotes(local_name) + ", the central directory " + gguf::in_quotes(entry.name),
                     entry.header_offset);
            }
            if (le16(header + 8) != entry.method) {
                fail("entry " + gguf::in_quotes(entry.name) + ": its local header and the central directory give "
                         "different compression methods",
                     entry.header_offset);
            }
            entry.data_offset = entry.header_offset + header_bytes + le16(header + 28);
            if (entry.data_offset > directory_offset_ ||
                directory_offset_ - entry.data_offset < entry.compressed_size) {
                fail("entry " + gguf::in_quotes(entry.name) + " ([" + std::to_string(entry.data_offset) + ", +" +
                         std::to_string(entry.compressed_size) + ")) runs into the central directory at byte " +
                         std::to_string(directory_offset_),
                     entry.header_offset);
            }
        });
    }

    void check_no_overlap() const {
        std::vector<const Entry*> by_offset;
        by_offset.reserve(entries_.size());
        for (const Entry& entry : entries_) by_offset.push_back(&entry);
        std::sort(by_offset.begin(), by_offset.end(),
                  [](const Entry* a, const Entry* b) { return a->header_offset < b->header_offset; });
        for (std::size_t i = 1; i < by_offset.size(); ++i) {
            const Entry& before = *by_offset[i - 1];
            const Entry& after = *by_offset[i];
            if (before.data_offset + before.compressed_size > after.header_offset) {
                fail("entries " + gguf::in_quotes(before.name) + " and " + gguf::in_quotes(after.name) +
                         " overlap: the first ends at byte " +
                         std::to_string(before.data_offset + before.compressed_size) + ", the second starts at byte " +
                         std::to_string(after.header_offset),
                     after.header_offset);
            }
        }
    }

    const SourceObject& file_;
    const std::uint64_t size_;
    const unsigned parallel_reads_;
    std::uint64_t end_offset_ = 0;
    std::uint64_t count_ = 0;
    std::uint64_t directory_size_ = 0;
    std::uint64_t directory_offset_ = 0;
    std::uint64_t directory_end_ = 0;  // where the end records start
    std::vector<Entry> entries_;
};

}  // namespace

std::vector<Entry> read_directory(const SourceObject& file, unsigned parallel_reads) {
    return DirectoryReader(file, parallel_reads).run();
}

std::string method_name(std::uint16_t method) {
    switch (method) {
        case 0: return "stored";
        case 8: return "deflate";
        case 9: return "deflate64";
        case 12: return "bzip2";
        case 14: return "lzma";
        case 93: return "zstd";
        case 95: return "xz";
        default: return "method " + std::to_string(method);
    }
}

std::string read_stored_entry(const SourceObject& file, const Entry& entry, std::uint64_t max_bytes,
                              std::string_view what) {
    const std::string name = std::string(what) + " " + gguf::in_quotes(entry.name);
    const auto fail = [&](const std::string& problem, std::uint64_t at) {
        throw SourceError({Problem{file.name(), name + problem, at}});
    };
    if (!entry.stored()) {
        fail(" is compressed (" + method_name(entry.method) +
                 "); only stored entries are read, as torch.save writes them",
             entry.header_offset);
    }
    if (entry.size != entry.compressed_size) {
        fail(" is stored, but its sizes differ (" + std::to_string(entry.size) + " and " +
                 std::to_string(entry.compressed_size) + ")",
             entry.record_offset);
    }
    if (entry.size > max_bytes) {
        fail(" is " + std::to_string(entry.size) + " bytes, over the limit of " + std::to_string(max_bytes),
             entry.data_offset);
    }
    std::string bytes(static_cast<std::size_t>(entry.size), '\0');
    try {
        file.read(entry.data_offset, bytes.size(), bytes.data());
    } catch (const IoError& error) {
        fail(std::string(": cannot read: ") + error.reason(), entry.data_offset);
    }
    if (crc32(bytes) != entry.crc32) fail(" does not match its CRC-32: the archive is damaged", entry.data_offset);
    return bytes;
}

}  // namespace tensorfs::zip
