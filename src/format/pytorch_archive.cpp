// The zip format of torch.save: every entry lies in one folder named after the archive (ARCHIVE/, "archive/" in
// recent versions), with
//   ARCHIVE/data.pkl      the pickle of the saved object; storages are persistent ids ('storage', ..., KEY, ...)
//   ARCHIVE/data/KEY      each storage's bytes, stored uncompressed (torch aligns them to 64 bytes)
//   ARCHIVE/version       the format version (or ARCHIVE/.data/version), a decimal number
//   ARCHIVE/byteorder     "little" or "big" (PyTorch 1.13 and later; absent means little)
// The directory and the small records are read and checked; the storages stay in the file, each tensor a slice.
#include <algorithm>
#include <unordered_map>

#include "gguf_reader.hpp"
#include "pytorch_file.hpp"
#include "zip_directory.hpp"

namespace tensorfs::pytorch {
namespace {

// torch reads archives of format versions 1 to 10 (caffe2/serialize/versions.h).
constexpr std::uint64_t kMaxVersion = 10;
constexpr std::uint64_t kMaxRecordBytes = 64;  // version and byteorder records

class ArchiveReader {
public:
    ArchiveReader(const SourceObject& file, unsigned parallel_reads, Problems& problems)
        : file_(file), parallel_reads_(parallel_reads), problems_(problems) {}

    std::optional<FileContents> run() {
        entries_ = zip::read_directory(file_, parallel_reads_);
        find_folder();
        check_version();
        check_byteorder();

        const zip::Entry* pickle_entry = record("data.pkl");
        if (pickle_entry == nullptr) {
            fail("archive has no " + gguf::in_quotes(folder_ + "data.pkl") + ": not a torch.save archive");
        }
        const std::string part = folder_ + "data.pkl";
        const std::string bytes = zip::read_stored_entry(file_, *pickle_entry, kMaxPickleBytes, "the pickle");
        const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
        pickle::Unpickled unpickled;
        try {
            unpickled = pickle::unpickle({data, bytes.size()}, pickle::StorageIds::Archive);
        } catch (const pickle::PickleError& error) {
            add_pickle_problem(problems_, file_, part, pickle_entry->data_offset, error);
            return std::nullopt;
        }
        const auto places = place_storages(unpickled.objects, pickle_entry->data_offset);
        if (!places) return std::nullopt;
        return checkpoint_contents(file_, part, unpickled, pickle_entry->data_offset, *places, problems_);
    }

private:
    [[noreturn]] void fail(const std::string& what, std::optional<std::uint64_t> at = std::nullopt,
                           ErrorKind kind = ErrorKind::InvalidSource) {
        throw SourceError({Problem{file_.name(), what, at, kind}});
    }

    // torch takes the folder from the first entry's name, and looks every record up in it.
    void find_folder() {
        if (entries_.empty()) fail("the zip archive is empty: not a torch.save archive");
        const std::string& first = entries_.front().name;
        const auto slash = first.find('/');
        if (slash == std::string::npos) {
            fail("entry " + gguf::in_quotes(first) + " is not in a folder: not a torch.save archive",
                 entries_.front().header_offset);
        }
        folder_ = first.substr(0, slash + 1);
        for (const zip::Entry& entry : entries_) {
            if (entry.name.starts_with(folder_)) by_name_.emplace(entry.name.substr(folder_.size()), &entry);
        }
    }

    const zip::Entry* record(const std::string& name) const {
        const auto found = by_name_.find(name);
        return found == by_name_.end() ? nullptr : found->second;
    }

    void check_version() {
        const zip::Entry* entry = record(".data/version");
        if (entry == nullptr) entry = record("version");
        if (entry == nullptr) fail("archive has no version record (" + folder_ + "version): not a torch.save archive");
        std::string text = zip::read_stored_entry(file_, *entry, kMaxRecordBytes, "the version record");
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
        std::uint64_t version = 0;
        const bool digits = !text.empty() && text.size() <= 4 &&
                            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (digits) version = std::stoull(text);
        if (!digits || version < 1 || version > kMaxVersion) {
            fail("version record " + gguf::in_quotes(text) + " is not a format version that torch reads (1 to " +
                     std::to_string(kMaxVersion) + ")",
                 entry->data_offset);
        }
    }

    void check_byteorder() {
        const zip::Entry* entry = record("byteorder");
        if (entry == nullptr) return;  // before PyTorch 1.13: little-endian
        const std::string order = zip::read_stored_entry(file_, *entry, kMaxRecordBytes, "the byteorder record");
        if (order == "big") {
            fail("storages are big-endian (byteorder record \"big\"); only little-endian checkpoints are read",
                 entry->data_offset, ErrorKind::Unsupported);
        }
        if (order != "little") {
            fail("byteorder record " + gguf::in_quotes(order) + " is neither \"little\" nor \"big\"",
                 entry->data_offset);
        }
    }

    // Each storage named by the pickle is the entry data/KEY, stored, holding at least its elements.
    std::optional<std::vector<StoragePlace>> place_storages(const pickle::Objects& objects,
                                                            std::uint64_t pickle_offset) {
        std::vector<StoragePlace> places;
        places.reserve(objects.storages().size());
        bool sound = true;
        for (const pickle::StorageRecord& storage : objects.storages()) {
            const std::string name = folder_ + "data/" + storage.key;
            const zip::Entry* entry = record("data/" + storage.key);
            StoragePlace place;
            if (entry == nullptr) {
                problems_.add(file_.name(), folder_ + "data.pkl: storage " + gguf::in_quotes(storage.key) +
                                                " is not in the archive (no entry " + gguf::in_quotes(name) + ")",
                              pickle_offset + storage.at_byte);
                sound = false;
            } else if (!entry->stored()) {
                problems_.add(file_.name(),
                              "storage entry " + gguf::in_quotes(name) + " is compressed (" +
                                  zip::method_name(entry->method) +
                                  "): tensors are served straight from the file, so their storages "
                                  "must be stored, as torch.save writes them",
                              entry->header_offset);
                sound = false;
            } else if (std::uint64_t bytes = 0;
                       __builtin_mul_overflow(storage.numel, storage.type->block_bytes, &bytes) ||
                       bytes > entry->size) {
                problems_.add(file_.name(), folder_ + "data.pkl: storage " + gguf::in_quotes(storage.key) + " has " +
                                                std::to_string(storage.numel) + " elements of " +
                                                std::string(storage.type->name) + ", but its entry holds " +
                                                std::to_string(entry->size) + " bytes",
                              pickle_offset + storage.at_byte);
                sound = false;
            } else {
                place = StoragePlace{entry->data_offset, bytes};
            }
            places.push_back(place);
        }
        if (!sound) return std::nullopt;
        return places;
    }

    const SourceObject& file_;
    const unsigned parallel_reads_;
    Problems& problems_;
    std::vector<zip::Entry> entries_;
    std::string folder_;  // "archive/"
    std::unordered_map<std::string, const zip::Entry*> by_name_;  // relative to the folder
};

}  // namespace

std::optional<FileContents> read_archive(const SourceObject& file, unsigned parallel_reads, Problems& problems) {
    return ArchiveReader(file, parallel_reads, problems).run();
}

}  // namespace tensorfs::pytorch
