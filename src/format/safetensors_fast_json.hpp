// A fast road through the JSON of safetensors headers and indexes, for the shape that nearly every real file has.
// A mount of 100,000 tensors spent most of its time in the full road (a duplicate-checking pass and a DOM build
// with nlohmann); simdjson reads the same text about ten times faster.
//
// The fast road only accepts: strictly valid JSON (simdjson validates the whole document), no key twice in any
// object, no \u escape, and exactly the fields and types below. Anything else gives nullopt, and the caller takes
// the full road (parse_json_refusing_duplicates and the checks on its document), which finds and words every
// problem. The rules of the format are checked after either road by the same code, so both roads give the same
// catalog, the same verdict and the same messages.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tensorfs::safetensors {

// {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ..., "__metadata__": {"k": "v"}}
struct UsualEntry {
    std::string name;
    std::string dtype;
    std::vector<std::uint64_t> shape;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
};

struct UsualHeader {
    std::vector<UsualEntry> entries;  // sorted by name, as the full road visits them; no name is empty
    std::optional<nlohmann::json> metadata;  // an object of strings, when "__metadata__" is there
};

std::optional<UsualHeader> read_usual_header(std::string_view text);

// {"metadata": {...}, "weight_map": {"tensor": "shard file", ...}}: metadata an object of strings, non-negative
// integers, booleans, null, and arrays and objects of those; weight_map an object of strings, not empty.
struct UsualIndex {
    std::optional<nlohmann::json> metadata;
    std::vector<std::string> shards;  // each shard string once, as written
    std::vector<std::pair<std::string, std::uint32_t>> weight_map;  // sorted by tensor name: index in shards
};

std::optional<UsualIndex> read_usual_index(std::string_view text);

}  // namespace tensorfs::safetensors
