// Layout of a safetensors file: an 8-byte little-endian header length N, N bytes of UTF-8 JSON (an object of
// tensor entries {"dtype", "shape", "data_offsets": [begin, end]} plus an optional "__metadata__" of strings),
// then the data section, which the tensors, sorted by offset, must cover exactly.
#include "safetensors_header.hpp"

#include <algorithm>
#include <new>
#include <string_view>
#include <tuple>

#include "safetensors_fast_json.hpp"
#include "safetensors_json.hpp"
#include "tensorfs/dtype.hpp"

namespace tensorfs::safetensors {
namespace {

constexpr std::uint64_t kLengthBytes = 8;
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // the reference's MAX_HEADER_SIZE

std::string shape_text(const std::vector<std::uint64_t>& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

std::string span_text(std::uint64_t begin, std::uint64_t end) {
    return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// A tensor entry as far as it could be read: its span is known even when its dtype or shape is broken, so that
// one bad dtype does not also show up as a gap.
struct Entry {
    std::string name;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    const TypeTraits* type = nullptr;  // nullptr when dtype or shape was broken
    std::vector<std::uint64_t> shape;
    std::uint64_t elements = 0;
};

// Non-negative JSON integers only: serde's usize refuses floats (2.0) and negative numbers.
std::optional<std::vector<std::uint64_t>> unsigned_list(const nlohmann::json& value) {
    if (!value.is_array()) return std::nullopt;
    std::vector<std::uint64_t> numbers;
    numbers.reserve(value.size());
    for (const auto& item : value) {
        if (!item.is_number_unsigned()) return std::nullopt;
        numbers.push_back(item.get<std::uint64_t>());
    }
    return numbers;
}

class HeaderChecker {
public:
    HeaderChecker(const SourceObject& file, Problems& problems)
        : file_(file), path_(file.name()), problems_(problems) {}

    std::optional<FileContents> run() {
        header_.file_size = file_.size();
        const auto text = read_header_text();
        if (!text) return std::nullopt;
        if (const auto bad = find_invalid_utf8(*text)) {
            return fail("header is not valid UTF-8", kLengthBytes + *bad);
        }
        std::vector<Entry> entries;
        bool duplicate_keys = false;
        if (auto usual = read_usual_header(*text)) {
            entries = check_usual_entries(std::move(*usual));
        } else {
            auto parsed = parse_json_refusing_duplicates(*text, "header", path_, kLengthBytes, problems_);
            if (!parsed.value) return fail_quietly();
            duplicate_keys = parsed.duplicate_keys;
            if (duplicate_keys) broken_ = true;
            if (!parsed.value->is_object()) {
                return fail("header is a JSON " + std::string(parsed.value->type_name()) + ", not an object",
                            kLengthBytes);
            }
            entries = check_entries(*parsed.value);
        }
        std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
            return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
        });
        // Without every tensor's span (one unreadable, or lost to a duplicate key) a gap proves nothing.
        if (entries_without_span_ == 0 && !duplicate_keys) check_coverage(entries);
        if (broken_) return std::nullopt;

        for (auto& entry : entries) {
            Tensor tensor;
            tensor.name = std::move(entry.name);
            tensor.type = entry.type;
            tensor.shape = std::move(entry.shape);
            tensor.elements = entry.elements;
            tensor.nbytes = entry.end - entry.begin;
            tensor.offset = data_start_ + entry.begin;
            header_.tensors.push_back(std::move(tensor));
        }
        return std::move(header_);
    }

private:
    // The full road: every entry of the document, in key order; the document can be freed afterwards, as the
    // entries hold all that is needed.
    std::vector<Entry> check_entries(const nlohmann::json& document) {
        std::vector<Entry> entries;
        for (const auto& [key, value] : document.items()) {
            if (key == "__metadata__") {
                check_metadata(value);
            } else if (auto entry = check_entry(key, value)) {
                entries.push_back(std::move(*entry));
            }
        }
        return entries;
    }

    // The fast road: the same checks in the same order, on values whose JSON types are already the right ones.
    std::vector<Entry> check_usual_entries(UsualHeader usual) {
        if (usual.metadata) header_.metadata = std::move(*usual.metadata);
        std::vector<Entry> entries;
        entries.reserve(usual.entries.size());
        for (auto& fields : usual.entries) {
            Entry entry;
            entry.name = std::move(fields.name);
            const bool offsets_known = check_span(entry, fields.begin, fields.end);
            if (const TypeTraits* type = known_dtype(entry, fields.dtype)) {
                set_shape(entry, type, std::move(fields.shape));
            }
            if (offsets_known && entry.type != nullptr) check_size(entry);
            if (!offsets_known) {
                ++entries_without_span_;
                continue;
            }
            entries.push_back(std::move(entry));
        }
        return entries;
    }

    std::nullopt_t fail(std::string what, std::optional<std::uint64_t> at_byte = std::nullopt) {
        problems_.add(path_, std::move(what), at_byte);
        return fail_quietly();
    }
    std::nullopt_t fail_quietly() {
        broken_ = true;
        return std::nullopt;
    }
    void fail_tensor(const std::string& name, const std::string& what,
                     std::optional<std::uint64_t> at_byte = std::nullopt) {
        fail("tensor " + json_quoted(name) + ": " + what, at_byte);
    }

    // The length prefix checked against the limit and the file size before the one read it sizes.
    std::optional<std::string> read_header_text() {
        const std::uint64_t size = header_.file_size;
        if (size < kLengthBytes) {
            fail("file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
            return std::nullopt;
        }
        unsigned char prefix[kLengthBytes];
        if (!read_exactly(prefix, kLengthBytes, 0, "the header length")) return std::nullopt;
        std::uint64_t length = 0;
        for (std::size_t i = 0; i < kLengthBytes; ++i) length |= static_cast<std::uint64_t>(prefix[i]) << (8 * i);
        if (length > kMaxHeaderBytes) {
            fail("header length " + std::to_string(length) + " is over the limit of " +
                     std::to_string(kMaxHeaderBytes) + " bytes",
                 0);
            return std::nullopt;
        }
        if (length > size - kLengthBytes) {
            fail("header length " + std::to_string(length) + " runs past the end of the file (" + std::to_string(size) +
                     " bytes)",
                 0);
            return std::nullopt;
        }
        std::string text(length, '\0');
        if (!read_exactly(text.data(), length, kLengthBytes, "the header")) return std::nullopt;
        data_start_ = kLengthBytes + length;
        data_size_ = size - data_start_;
        return text;
    }

    // False, with a problem, when the bytes cannot be read.
    bool read_exactly(void* dst, std::size_t length, std::uint64_t offset, const char* what) {
        try {
            file_.read(offset, length, dst);
            return true;
        } catch (const IoError& error) {
            fail(std::string("cannot read ") + what + ": " + error.reason(), offset);
            return false;
        }
    }

    // "__metadata__": an object of strings; null counts as absent, as the reference's Option does.
    void check_metadata(const nlohmann::json& value) {
        if (value.is_null()) return;
        if (!value.is_object()) {
            fail("__metadata__ is a JSON " + std::string(value.type_name()) + ", not an object of strings");
            return;
        }
        for (const auto& [key, item] : value.items()) {
            if (!item.is_string()) {
                fail("__metadata__ value of " + json_quoted(key) + " is a JSON " + std::string(item.type_name()) +
                     ", not a string");
            }
        }
        header_.metadata = value;
    }

    std::optional<Entry> check_entry(const std::string& name, const nlohmann::json& value) {
        if (name.empty()) fail("a tensor has an empty name");
        if (!value.is_object()) {
            fail_tensor(name, "its entry is a JSON " + std::string(value.type_name()) + ", not an object");
            ++entries_without_span_;
            return std::nullopt;
        }
        // Other fields are ignored, as the reference library's deserializer ignores them.
        Entry entry;
        entry.name = name;
        const bool offsets_known = check_offsets(entry, value);
        check_type_and_shape(entry, value);
        if (offsets_known && entry.type != nullptr) check_size(entry);
        if (!offsets_known) {
            ++entries_without_span_;
            return std::nullopt;
        }
        return entry;
    }

    bool check_offsets(Entry& entry, const nlohmann::json& value) {
        const auto found = value.find("data_offsets");
        if (found == value.end()) {
            fail_tensor(entry.name, "no data_offsets");
            return false;
        }
        const auto offsets = unsigned_list(*found);
        if (!offsets || offsets->size() != 2) {
            fail_tensor(entry.name, "data_offsets " + brief(*found) + " is not a pair of non-negative integers");
            return false;
        }
        return check_span(entry, (*offsets)[0], (*offsets)[1]);
    }

    // False when the span cannot be placed at all (it ends before it begins).
    bool check_span(Entry& entry, std::uint64_t begin, std::uint64_t end) {
        entry.begin = begin;
        entry.end = end;
        if (entry.end < entry.begin) {
            fail_tensor(entry.name, "data_offsets " + span_text(entry.begin, entry.end) + " end before they begin");
            return false;
        }
        if (entry.end > data_size_) {
            fail_tensor(entry.name,
                        "data_offsets " + span_text(entry.begin, entry.end) +
                            " run past the end of the file (the data section holds " + std::to_string(data_size_) +
                            " bytes)",
                        data_start_ + std::min(entry.begin, data_size_));
        }
        return true;
    }

    // Sets entry.type, shape and elements when both dtype and shape are sound.
    void check_type_and_shape(Entry& entry, const nlohmann::json& value) {
        const TypeTraits* type = nullptr;
        const auto dtype = value.find("dtype");
        if (dtype == value.end()) {
            fail_tensor(entry.name, "no dtype");
        } else if (!dtype->is_string()) {
            fail_tensor(entry.name, "dtype " + brief(*dtype) + " is not a string");
        } else {
            type = known_dtype(entry, dtype->get_ref<const std::string&>());
        }
        const auto shape_value = value.find("shape");
        std::optional<std::vector<std::uint64_t>> shape;
        if (shape_value == value.end()) {
            fail_tensor(entry.name, "no shape");
        } else if (!(shape = unsigned_list(*shape_value))) {
            fail_tensor(entry.name, "shape " + brief(*shape_value) + " is not a list of non-negative integers");
        }
        if (type == nullptr || !shape) return;
        set_shape(entry, type, std::move(*shape));
    }

    // nullptr, with a problem, when the format has no such dtype.
    const TypeTraits* known_dtype(const Entry& entry, const std::string& dtype) {
        const TypeTraits* type = safetensors_dtype_by_name(dtype);
        if (type == nullptr) fail_tensor(entry.name, "unknown dtype " + json_quoted(dtype));
        return type;
    }

    // Sets entry.type, shape and elements, unless the element count overflows.
    void set_shape(Entry& entry, const TypeTraits* type, std::vector<std::uint64_t> shape) {
        std::uint64_t elements = 1;
        for (const std::uint64_t dim : shape) {
            if (__builtin_mul_overflow(elements, dim, &elements)) {
                fail_tensor(entry.name, "shape " + shape_text(shape) + " has more than 2^64 elements");
                return;
            }
        }
        entry.type = type;
        entry.shape = std::move(shape);
        entry.elements = elements;
    }

    // size = elements x width, in whole bytes (the reference counts bits, so that F4 and F6 fit).
    void check_size(const Entry& entry) {
        const std::uint64_t bits_per_element = 8u * entry.type->block_bytes / entry.type->block_elements;
        std::uint64_t bits = 0;
        if (__builtin_mul_overflow(entry.elements, bits_per_element, &bits)) {
            fail_tensor(entry.name, "shape " + shape_text(entry.shape) + " of " + std::string(entry.type->name) +
                                        " is too large: its size overflows 64 bits");
            return;
        }
        if (bits % 8 != 0) {
            fail_tensor(entry.name, std::to_string(entry.elements) + " elements of " + std::string(entry.type->name) +
                                        " do not fill a whole number of bytes");
            return;
        }
        if (bits / 8 != entry.end - entry.begin) {
            fail_tensor(entry.name,
                        "shape " + shape_text(entry.shape) + " of " + std::string(entry.type->name) + " takes " +
                            std::to_string(bits / 8) + " bytes but data_offsets " + span_text(entry.begin, entry.end) +
                            " hold " + std::to_string(entry.end - entry.begin),
                        data_start_ + entry.begin);
        }
    }

    // Sorted by offset, the tensors must tile the data section: start at 0, no gap, no overlap, and the last
    // one ends where the file ends.
    void check_coverage(const std::vector<Entry>& entries) {
        std::uint64_t covered = 0;        // end of the data claimed so far
        const Entry* furthest = nullptr;  // the tensor that reaches `covered`
        for (const Entry& entry : entries) {
            if (entry.begin > covered) {
                const std::uint64_t gap = entry.begin - covered;
                fail_tensor(entry.name,
                            std::to_string(gap) + " bytes before it belong to no tensor" +
                                (furthest ? " (after " + json_quoted(furthest->name) + ")"
                                          : " (at the start of the data section)"),
                            data_start_ + covered);
            } else if (entry.begin < covered) {
                fail_tensor(entry.name,
                            "data_offsets " + span_text(entry.begin, entry.end) + " overlap tensor " +
                                json_quoted(furthest->name) + " " + span_text(furthest->begin, furthest->end),
                            data_start_ + entry.begin);
            }
            if (entry.end >= covered) {
                covered = entry.end;
                furthest = &entry;
            }
        }
        if (covered < data_size_) {
            fail(std::to_string(data_size_ - covered) + " bytes after the last tensor's data belong to no tensor",
                 data_start_ + covered);
        }
    }

    const SourceObject& file_;
    const std::string& path_;
    Problems& problems_;
    bool broken_ = false;
    std::size_t entries_without_span_ = 0;
    std::uint64_t data_start_ = 0;
    std::uint64_t data_size_ = 0;
    FileContents header_;
};

}  // namespace

std::optional<FileContents> read_header(const SourceObject& file, Problems& problems) {
    try {
        return HeaderChecker(file, problems).run();
    } catch (const std::bad_alloc&) {
        // A header near the 100 MB limit parses into a document several times its size; under a memory limit
        // (ulimit -v) that is one clear line, not an abort.
        problems.add(file.name(), "not enough memory to read its header");
        return std::nullopt;
    }
}

}  // namespace tensorfs::safetensors
