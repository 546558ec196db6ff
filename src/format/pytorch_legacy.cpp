// The legacy format of torch.save (PyTorch 0.4 to 1.5, and _use_new_zipfile_serialization=False since): five
// pickles one after the other, then the storages one after the other:
//   the magic number 0x1950a86a20f9469cfc6c, the protocol version 1001, the system info
//   ({"little_endian": ..., "type_sizes": ...}), the saved object (its storages are persistent ids
//   ('storage', CLASS, KEY, LOCATION, NUMEL, VIEW)), the list of storage keys,
//   then for each key in that order: its element count (8 bytes, little-endian) and its bytes.
// The pickles are read from a window at the start of the file that grows until they fit; the storages stay in the
// file, each tensor a slice.
#include <algorithm>
#include <unordered_map>

#include "gguf_reader.hpp"
#include "pytorch_file.hpp"
#include "tensorfs/in_parallel.hpp"

namespace tensorfs::pytorch {
namespace {

// The magic number as LONG1 writes it: little-endian two's complement, 10 bytes.
constexpr std::string_view kMagic("\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 10);
constexpr std::int64_t kProtocolVersion = 1001;
constexpr std::uint64_t kFirstWindowBytes = 64 << 10;
constexpr std::uint64_t kCountBytes = 8;

class LegacyReader {
public:
    LegacyReader(const SourceObject& file, unsigned parallel_reads, Problems& problems)
        : file_(file), parallel_reads_(parallel_reads), problems_(problems) {}

    std::optional<FileContents> run() {
        const auto magic = next_pickle(pickle::StorageIds::Legacy, "the magic number");
        if (!magic) return std::nullopt;
        const pickle::Value& number = magic->objects[magic->root];
        if (number.kind != pickle::Kind::BigInt || magic->objects.text(number) != kMagic) {
            return refuse("does not start with the magic number of torch.save's legacy format", 0);
        }
        const std::uint64_t protocol_at = position_;
        const auto protocol = next_pickle(pickle::StorageIds::Legacy, "the protocol version");
        if (!protocol) return std::nullopt;
        const pickle::Value& version = protocol->objects[protocol->root];
        if (version.kind != pickle::Kind::Int || version.integer != kProtocolVersion) {
            return refuse("legacy protocol version is not 1001", protocol_at);
        }
        const std::uint64_t info_at = position_;
        const auto info = next_pickle(pickle::StorageIds::Legacy, "the system info");
        if (!info || !check_system_info(*info, info_at)) return std::nullopt;

        const std::uint64_t object_at = position_;
        const auto object = next_pickle(pickle::StorageIds::Legacy, "the pickle");
        if (!object) return std::nullopt;
        const std::uint64_t keys_at = position_;
        const auto keys = next_pickle(pickle::StorageIds::Legacy, "the storage list");
        if (!keys) return std::nullopt;
        const auto places = place_storages(object->objects, *keys, keys_at);
        if (!places) return std::nullopt;
        return checkpoint_contents(file_, "pickle", *object, object_at, *places, problems_);
    }

private:
    std::nullopt_t refuse(const std::string& what, std::uint64_t at) {
        problems_.add(file_.name(), what, at);
        return std::nullopt;
    }

    // The pickle at position_, read from a window of the file's start that grows (to kMaxPickleBytes at most)
    // while the pickle runs past it; position_ moves past it.
    std::optional<pickle::Unpickled> next_pickle(pickle::StorageIds ids, const std::string& what) {
        for (;;) {
            try {
                const std::span<const std::uint8_t> rest(window_.data() + position_, window_.size() - position_);
                pickle::Unpickled unpickled = pickle::unpickle(rest, ids);
                position_ += unpickled.end;
                return unpickled;
            } catch (const pickle::PickleError& error) {
                const bool can_grow = error.truncated() && window_.size() < file_.size();
                if (can_grow && window_.size() >= kMaxPickleBytes) {
                    refuse(what + " is larger than the limit of " + std::to_string(kMaxPickleBytes) + " bytes",
                           position_);
                    return std::nullopt;
                }
                if (!can_grow) {
                    add_pickle_problem(problems_, file_, what, position_, error);
                    return std::nullopt;
                }
            }
            if (!grow_window()) return std::nullopt;
        }
    }

    bool grow_window() {
        const std::uint64_t wanted = std::max<std::uint64_t>(kFirstWindowBytes, window_.size() * 4);
        const std::uint64_t size = std::min({wanted, file_.size(), kMaxPickleBytes});
        const std::size_t had = window_.size();
        window_.resize(static_cast<std::size_t>(size));
        try {
            file_.read(had, window_.size() - had, window_.data() + had);
            return true;
        } catch (const IoError& error) {
            refuse(std::string("cannot read: ") + error.reason(), had);
            return false;
        }
    }

    bool check_system_info(const pickle::Unpickled& info, std::uint64_t at) {
        const pickle::Value& root = info.objects[info.root];
        if (root.kind != pickle::Kind::Dict) {
            refuse("system info is not a dict", at);
            return false;
        }
        const auto items = info.objects.items(root);
        for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
            const pickle::Value& key = info.objects[items[i]];
            const pickle::Value& value = info.objects[items[i + 1]];
            if (key.kind == pickle::Kind::String && info.objects.text(key) == "little_endian" &&
                value.kind == pickle::Kind::Bool && value.integer == 0) {
                problems_.add_unsupported(file_.name(),
                                          "storages are big-endian (system info little_endian=False); only "
                                          "little-endian checkpoints are read",
                                          at);
                return false;
            }
        }
        return true;
    }

    // The storages follow the storage list, in its order: each one an 8-byte element count and its bytes.
    std::optional<std::vector<StoragePlace>> place_storages(const pickle::Objects& objects,
                                                            const pickle::Unpickled& keys, std::uint64_t keys_at) {
        const pickle::Value& list = keys.objects[keys.root];
        if (list.kind != pickle::Kind::List && list.kind != pickle::Kind::Tuple) {
            return refuse("the storage list is not a list", keys_at);
        }
        std::unordered_map<std::string, std::uint32_t> by_key;
        for (std::uint32_t i = 0; i < objects.storages().size(); ++i) by_key.emplace(objects.storages()[i].key, i);

        std::vector<StoragePlace> places(objects.storages().size());
        std::vector<bool> placed(objects.storages().size(), false);
        std::vector<std::uint64_t> count_offsets;  // by storage index
        std::vector<std::uint32_t> order;
        std::uint64_t at = position_;
        for (const pickle::Ref item : keys.objects.items(list)) {
            const pickle::Value& key = keys.objects[item];
            std::string text;
            if (key.kind == pickle::Kind::String) text = keys.objects.text(key);
            else if (key.kind == pickle::Kind::Int) text = std::to_string(key.integer);
            else return refuse("the storage list holds something other than storage keys", keys_at);
            const auto found = by_key.find(text);
            if (found == by_key.end()) {
                return refuse("the storage list names storage " + gguf::in_quotes(text) +
                                  ", which the pickle never refers to",
                              keys_at);
            }
            if (placed[found->second]) {
                return refuse("the storage list names storage " + gguf::in_quotes(text) + " twice", keys_at);
            }
            const pickle::StorageRecord& storage = objects.storages()[found->second];
            std::uint64_t bytes = 0;
            std::uint64_t end = 0;
            if (__builtin_mul_overflow(storage.numel, storage.type->block_bytes, &bytes) ||
                __builtin_add_overflow(at, kCountBytes, &end) || __builtin_add_overflow(end, bytes, &end) ||
                end > file_.size()) {
                return refuse("storage " + gguf::in_quotes(text) + " (" + std::to_string(storage.numel) +
                                  " elements of " + std::string(storage.type->name) +
                                  ") runs past the end of the file (" + std::to_string(file_.size()) + " bytes)",
                              at);
            }
            places[found->second] = StoragePlace{at + kCountBytes, bytes};
            placed[found->second] = true;
            order.push_back(found->second);
            at = end;
        }
        for (std::uint32_t i = 0; i < placed.size(); ++i) {
            if (!placed[i]) {
                return refuse("pickle refers to storage " + gguf::in_quotes(objects.storages()[i].key) +
                                  ", which the storage list does not name",
                              keys_at);
            }
        }
        if (!check_counts(objects, places, order)) return std::nullopt;
        return places;
    }

    // Each storage's bytes are preceded by its element count, which must be what the pickle says.
    bool check_counts(const pickle::Objects& objects, const std::vector<StoragePlace>& places,
                      const std::vector<std::uint32_t>& order) {
        std::vector<std::string> wrong(order.size());
        in_parallel(order.size(), parallel_reads_, [&](std::size_t index) {
            const std::uint32_t storage = order[index];
            const std::uint64_t at = places[storage].offset - kCountBytes;
            unsigned char bytes[kCountBytes];
            try {
                file_.read(at, kCountBytes, bytes);
            } catch (const IoError& error) {
                wrong[index] = std::string("cannot read a storage's element count: ") + error.reason();
                return;
            }
            std::uint64_t count = 0;
            for (std::size_t i = 0; i < kCountBytes; ++i) count |= std::uint64_t{bytes[i]} << (8 * i);
            const pickle::StorageRecord& record = objects.storages()[storage];
            if (count != record.numel) {
                wrong[index] = "storage " + gguf::in_quotes(record.key) + " has " + std::to_string(count) +
                               " elements in the file, but the pickle says " + std::to_string(record.numel);
            }
        });
        bool sound = true;
        for (std::size_t index = 0; index < order.size(); ++index) {
            if (!wrong[index].empty()) {
                refuse(wrong[index], places[order[index]].offset - kCountBytes);
                sound = false;
            }
        }
        return sound;
    }

    const SourceObject& file_;
    const unsigned parallel_reads_;
    Problems& problems_;
    std::vector<std::uint8_t> window_;  // the file's first bytes
    std::uint64_t position_ = 0;        // where the next pickle starts
};

}  // namespace

std::optional<FileContents> read_legacy(const SourceObject& file, unsigned parallel_reads, Problems& problems) {
    return LegacyReader(file, parallel_reads, problems).run();
}

}  // namespace tensorfs::pytorch
