#include "gguf_metadata.hpp"

#include <array>
#include <iterator>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tensorfs::gguf {
namespace {

using json = nlohmann::ordered_json;

// GGUF value type ids (gguf.h `enum gguf_type`).
enum ValueType : std::uint32_t {
    kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6, kBool = 7,
    kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};

struct ValueTypeInfo {
    std::string_view name;
    std::uint64_t min_bytes;  // stored size; for a string its length field, the least it can take
};

constexpr std::array<ValueTypeInfo, 13> kValueTypes{{
    {"UINT8", 1}, {"INT8", 1}, {"UINT16", 2}, {"INT16", 2}, {"UINT32", 4}, {"INT32", 4}, {"FLOAT32", 4},
    {"BOOL", 1}, {"STRING", 8}, {"ARRAY", 12}, {"UINT64", 8}, {"INT64", 8}, {"FLOAT64", 8},
}};

// ggml's limit on the elements of one array value.
constexpr std::uint64_t kMaxArrayElements = std::uint64_t{1} << 30;

json read_scalar(HeaderReader& reader, std::uint32_t type, std::string_view what) {
    switch (type) {
        case kUint8: return reader.read<std::uint8_t>(what);
        case kInt8: return reader.read<std::int8_t>(what);
        case kUint16: return reader.read<std::uint16_t>(what);
        case kInt16: return reader.read<std::int16_t>(what);
        case kUint32: return reader.read<std::uint32_t>(what);
        case kInt32: return reader.read<std::int32_t>(what);
        case kFloat32: return static_cast<double>(reader.read<float>(what));
        case kBool: return reader.read<std::uint8_t>(what) != 0;
        case kString: return reader.read_string(what);
        case kUint64: return reader.read<std::uint64_t>(what);
        case kInt64: return reader.read<std::int64_t>(what);
        case kFloat64: return reader.read<double>(what);
        default: break;
    }
    throw std::logic_error("read_scalar: type checked by the caller");
}

// Reads the value of `key` (its type field first). Returns the value and its type name.
std::pair<json, std::string> read_value(HeaderReader& reader, const std::string& key) {
    const std::string what = "the value of key " + in_quotes(key);
    const std::uint64_t type_at = reader.position();
    const auto type = reader.read<std::uint32_t>(what);
    if (type >= kValueTypes.size()) {
        reader.fail("key " + in_quotes(key) + " has unknown value type " + std::to_string(type), type_at);
    }
    if (type != kArray) return {read_scalar(reader, type, what), std::string(kValueTypes[type].name)};

    const std::uint64_t element_type_at = reader.position();
    const auto element_type = reader.read<std::uint32_t>(what);
    if (element_type == kArray) {
        reader.fail("key " + in_quotes(key) + " holds an array of arrays; GGUF does not allow nested arrays",
                    element_type_at);
    }
    if (element_type >= kValueTypes.size()) {
        reader.fail("key " + in_quotes(key) + " is an array of unknown value type " + std::to_string(element_type),
                    element_type_at);
    }
    const std::uint64_t count_at = reader.position();
    const auto count = reader.read<std::uint64_t>(what);
    const auto& element = kValueTypes[element_type];
    if (count > reader.remaining() / element.min_bytes) {
        reader.fail("key " + in_quotes(key) + " claims " + std::to_string(count) + " " + std::string(element.name) +
                        " elements, more than the " + std::to_string(reader.remaining()) +
                        " bytes left in the file can hold",
                    count_at);
    }
    if (count > kMaxArrayElements) {
        reader.fail("key " + in_quotes(key) + " has " + std::to_string(count) + " elements, more than the limit of " +
                        std::to_string(kMaxArrayElements),
                    count_at);
    }
    // No reserve: memory grows with the elements actually read, never with a claimed count.
    json values = json::array();
    for (std::uint64_t i = 0; i < count; ++i) values.push_back(read_scalar(reader, element_type, what));
    return {std::move(values), "ARRAY[" + std::string(element.name) + "]"};
}

// Appends a key known to be new. ordered_json's own insertion searches every key first, which would make a
// header with many keys quadratic; the caller's set has already ruled out a duplicate.
void append(json& object, std::string key, json value) {
    auto& pairs = object.get_ref<json::object_t&>();
    static_cast<std::vector<json::object_t::value_type>&>(pairs).emplace_back(std::move(key), std::move(value));
}

}  // namespace

Metadata read_metadata(HeaderReader& reader, std::uint64_t count, Problems& problems) {
    Metadata metadata;
    std::unordered_set<std::string> seen;
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t key_at = reader.position();
        std::string key = reader.read_string("a metadata key");
        const std::uint64_t value_at = reader.position();
        auto [value, type_name] = read_value(reader, key);
        if (key.empty()) {
            problems.add(reader.path(), "metadata key " + std::to_string(i) + " is empty", key_at);
        } else if (!seen.insert(key).second) {
            problems.add(reader.path(), "duplicate metadata key " + in_quotes(key), key_at);
        } else {
            metadata.value_at.push_back(value_at);
            append(metadata.types, key, std::move(type_name));
            append(metadata.values, std::move(key), std::move(value));
        }
    }
    return metadata;
}

std::optional<std::uint64_t> Metadata::position_of(const std::string& key) const {
    const auto found = values.find(key);
    if (found == values.end()) return std::nullopt;
    return value_at[static_cast<std::size_t>(std::distance(values.begin(), found))];
}

std::optional<std::int64_t> integer_value(const Metadata& metadata, const std::string& key, const std::string& file) {
    const auto found = metadata.values.find(key);
    if (found == metadata.values.end()) return std::nullopt;
    const auto refuse = [&](const std::string& what) {
        Problems problems;
        problems.add(file, "metadata key " + in_quotes(key) + " " + what, metadata.position_of(key));
        problems.throw_if_any();
    };
    if (found->is_number_unsigned()) {
        const auto value = found->get<std::uint64_t>();
        if (value > static_cast<std::uint64_t>(INT64_MAX)) refuse("is too large: " + std::to_string(value));
        return static_cast<std::int64_t>(value);
    }
    if (found->is_number_integer()) return found->get<std::int64_t>();
    refuse("must be an integer but is " + metadata.types[key].get<std::string>());
    return std::nullopt;  // unreachable: refuse threw
}

}  // namespace tensorfs::gguf
