#include "safetensors_fast_json.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <simdjson.h>

namespace tensorfs::safetensors {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// simdjson and nlohmann decode escapes alike, but lone UTF-16 surrogates in \u escapes are where JSON parsers part
// ways: leave every \u to the full road. (A "\\u" that is an escaped backslash before a 'u' goes there too.)
bool has_unicode_escape(std::string_view text) { return text.find("\\u") != std::string_view::npos; }

std::optional<element> parse(simdjson::dom::parser& parser, std::string_view text) {
    if (has_unicode_escape(text)) return std::nullopt;
    element root;
    if (parser.parse(text.data(), text.size()).get(root) != simdjson::SUCCESS) return std::nullopt;
    return root;
}

// Only numbers nlohmann reads as unsigned integers: no sign, no fraction, no exponent, below 2^64.
std::optional<std::uint64_t> plain_unsigned(element value) {
    if (value.type() != element_type::INT64 && value.type() != element_type::UINT64) return std::nullopt;
    std::uint64_t number;
    if (value.get_uint64().get(number) != simdjson::SUCCESS) return std::nullopt;
    return number;
}

std::optional<std::vector<std::uint64_t>> unsigned_list(element value) {
    simdjson::dom::array array;
    if (value.get_array().get(array) != simdjson::SUCCESS) return std::nullopt;
    std::vector<std::uint64_t> numbers;
    numbers.reserve(array.size());
    for (const element item : array) {
        const auto number = plain_unsigned(item);
        if (!number) return std::nullopt;
        numbers.push_back(*number);
    }
    return numbers;
}

// An object whose keys are all different (the full road reports the duplicates).
std::optional<simdjson::dom::object> object_of_distinct_keys(element value) {
    simdjson::dom::object object;
    if (value.get_object().get(object) != simdjson::SUCCESS) return std::nullopt;
    std::unordered_set<std::string_view> keys;
    for (const auto field : object) {
        if (!keys.insert(field.key).second) return std::nullopt;
    }
    return object;
}

// Well below the nesting the full road refuses (127 levels), counting the document's own object as level 1.
constexpr int kMaxLevel = 64;

// Strings, non-negative integers, booleans, null, and arrays and objects of those, as nlohmann would hold them.
// `level`: how deep `value` lies.
std::optional<nlohmann::json> plain_value(element value, int level) {
    switch (value.type()) {
        case element_type::STRING: {
            std::string_view text;
            if (value.get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
            return nlohmann::json(std::string(text));
        }
        case element_type::BOOL: {
            bool flag;
            if (value.get_bool().get(flag) != simdjson::SUCCESS) return std::nullopt;
            return nlohmann::json(flag);
        }
        case element_type::NULL_VALUE: return nlohmann::json(nullptr);
        case element_type::INT64:
        case element_type::UINT64: {
            const auto number = plain_unsigned(value);
            if (!number) return std::nullopt;
            return nlohmann::json(*number);
        }
        case element_type::ARRAY: {
            simdjson::dom::array items;
            if (level > kMaxLevel || value.get_array().get(items) != simdjson::SUCCESS) return std::nullopt;
            nlohmann::json array = nlohmann::json::array();
            for (const element item : items) {
                auto converted = plain_value(item, level + 1);
                if (!converted) return std::nullopt;
                array.push_back(std::move(*converted));
            }
            return array;
        }
        case element_type::OBJECT: {
            if (level > kMaxLevel) return std::nullopt;
            const auto object = object_of_distinct_keys(value);
            if (!object) return std::nullopt;
            nlohmann::json converted = nlohmann::json::object();
            for (const auto field : *object) {
                auto item = plain_value(field.value, level + 1);
                if (!item) return std::nullopt;
                converted[std::string(field.key)] = std::move(*item);
            }
            return converted;
        }
        default: return std::nullopt;  // negative numbers and fractions: the full road knows them exactly
    }
}

std::optional<nlohmann::json> object_of_strings(element value) {
    const auto object = object_of_distinct_keys(value);
    if (!object) return std::nullopt;
    nlohmann::json strings = nlohmann::json::object();
    for (const auto field : *object) {
        std::string_view text;
        if (field.value.get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
        strings[std::string(field.key)] = std::string(text);
    }
    return strings;
}

std::optional<UsualEntry> usual_entry(std::string_view name, element value) {
    simdjson::dom::object fields;
    if (name.empty() || value.get_object().get(fields) != simdjson::SUCCESS || fields.size() != 3) return std::nullopt;
    UsualEntry entry;
    entry.name = name;
    bool dtype = false, shape = false, offsets = false;
    for (const auto field : fields) {
        if (field.key == "dtype" && !dtype) {
            std::string_view text;
            if (field.value.get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
            entry.dtype = text;
            dtype = true;
        } else if (field.key == "shape" && !shape) {
            auto numbers = unsigned_list(field.value);
            if (!numbers) return std::nullopt;
            entry.shape = std::move(*numbers);
            shape = true;
        } else if (field.key == "data_offsets" && !offsets) {
            const auto numbers = unsigned_list(field.value);
            if (!numbers || numbers->size() != 2) return std::nullopt;
            entry.begin = (*numbers)[0];
            entry.end = (*numbers)[1];
            offsets = true;
        } else {
            return std::nullopt;  // another field, or one of these twice
        }
    }
    return entry;
}

// Sorts `items` by name, as the full road's std::map visits them, and tells whether a name is there twice.
template <typename Item>
bool sort_by_name_and_find_twins(std::vector<Item>& items, const std::string& (*name)(const Item&)) {
    const auto by_name = [name](const Item& a, const Item& b) { return name(a) < name(b); };
    // Writers often sort the keys already (transformers writes its weight_map so).
    if (!std::is_sorted(items.begin(), items.end(), by_name)) std::sort(items.begin(), items.end(), by_name);
    return std::adjacent_find(items.begin(), items.end(), [name](const Item& a, const Item& b) {
               return name(a) == name(b);
           }) != items.end();
}

const std::string& entry_name(const UsualEntry& entry) { return entry.name; }
const std::string& weight_name(const std::pair<std::string, std::uint32_t>& weight) { return weight.first; }

}  // namespace

std::optional<UsualHeader> read_usual_header(std::string_view text) {
    simdjson::dom::parser parser;
    const auto root = parse(parser, text);
    simdjson::dom::object object;
    if (!root || root->get_object().get(object) != simdjson::SUCCESS) return std::nullopt;
    UsualHeader header;
    header.entries.reserve(object.size());
    for (const auto field : object) {
        if (field.key == "__metadata__") {
            if (header.metadata) return std::nullopt;  // twice
            header.metadata = object_of_strings(field.value);
            if (!header.metadata) return std::nullopt;
        } else {
            auto entry = usual_entry(field.key, field.value);
            if (!entry) return std::nullopt;
            header.entries.push_back(std::move(*entry));
        }
    }
    if (sort_by_name_and_find_twins(header.entries, entry_name)) return std::nullopt;
    return header;
}

std::optional<UsualIndex> read_usual_index(std::string_view text) {
    simdjson::dom::parser parser;
    const auto root = parse(parser, text);
    simdjson::dom::object object;
    if (!root || root->get_object().get(object) != simdjson::SUCCESS) return std::nullopt;
    UsualIndex index;
    bool weight_map_seen = false;
    for (const auto field : object) {
        if (field.key == "metadata" && !index.metadata) {
            simdjson::dom::object metadata;
            if (field.value.get_object().get(metadata) != simdjson::SUCCESS) return std::nullopt;
            index.metadata = plain_value(field.value, 2);
            if (!index.metadata) return std::nullopt;
        } else if (field.key == "weight_map" && !weight_map_seen) {
            simdjson::dom::object weights;
            if (field.value.get_object().get(weights) != simdjson::SUCCESS || weights.size() == 0) return std::nullopt;
            index.weight_map.reserve(weights.size());
            std::unordered_map<std::string_view, std::uint32_t> shard_ids;  // a model has a few shards
            for (const auto weight : weights) {
                std::string_view shard;
                if (weight.key.empty() || weight.value.get_string().get(shard) != simdjson::SUCCESS) {
                    return std::nullopt;
                }
                const auto [id, added] = shard_ids.emplace(shard, static_cast<std::uint32_t>(index.shards.size()));
                if (added) index.shards.emplace_back(shard);
                index.weight_map.emplace_back(std::string(weight.key), id->second);
            }
            weight_map_seen = true;
        } else {
            return std::nullopt;  // another key, or one of these twice
        }
    }
    if (!weight_map_seen || sort_by_name_and_find_twins(index.weight_map, weight_name)) return std::nullopt;
    return index;
}

}  // namespace tensorfs::safetensors
