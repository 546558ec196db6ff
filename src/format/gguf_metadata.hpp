// The key/value section of a GGUF file, read into JSON values and GGUF type names.
//
// Values keep their natural JSON form: integers exactly (UINT64 as unsigned, INT64 as signed), FLOAT32 widened to
// double (exact, so the float's bits can be recovered), BOOL as true/false (any non-zero byte is true, as ggml
// reads it), STRING as the stored bytes unchanged, arrays in full. Strings are not checked for UTF-8: whoever
// dumps the metadata as JSON text must pass nlohmann's error_handler_t::replace, which shows an invalid byte
// as U+FFFD; the Catalog itself keeps every byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf_reader.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs::gguf {

struct Metadata {
    nlohmann::ordered_json values = nlohmann::ordered_json::object();  // key -> value, in file order
    nlohmann::ordered_json types = nlohmann::ordered_json::object();   // key -> "UINT32", "ARRAY[STRING]", ...
    std::vector<std::uint64_t> value_at;  // per key, in the same order: where its value (type field) starts

    // Where the value of `key` starts in the file; nullopt when the key is absent.
    std::optional<std::uint64_t> position_of(const std::string& key) const;
};

// Reads `count` key/value pairs from the reader's position. What makes reading on impossible (the file ends,
// an unknown or nested value type, an array longer than the rest of the file) throws at once; an empty or
// duplicate key goes into `problems` and reading goes on.
Metadata read_metadata(HeaderReader& reader, std::uint64_t count, Problems& problems);

// The smallest number of bytes one key/value pair takes in a file (key length, one key byte, value type, one
// value byte): a count of pairs larger than remaining bytes / this cannot be true.
inline constexpr std::uint64_t kMinKeyValueBytes = 8 + 1 + 4 + 1;

// An integer scalar of `metadata` (any GGUF integer type); nullopt when the key is absent. Throws SourceError
// naming the key when it holds something else.
std::optional<std::int64_t> integer_value(const Metadata& metadata, const std::string& key, const std::string& file);

}  // namespace tensorfs::gguf
