// JSON reading shared by the safetensors header and index parsers: strict UTF-8, duplicate keys refused,
// and names quoted so that every problem stays one printable line.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "tensorfs/errors.hpp"

namespace tensorfs::safetensors {

// Offset of the first byte that breaks UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF), or nullopt when all of `text` is valid. Rust's str::from_utf8, which the reference uses, is as strict.
std::optional<std::size_t> find_invalid_utf8(std::string_view text);

struct ParsedJson {
    std::optional<nlohmann::json> value;  // nullopt when the text is not JSON at all
    bool duplicate_keys = false;
};

// Parses `text`, which starts at byte `text_offset` of `file`, as one JSON value; `subject` names it in messages
// ("header", "index"). A syntax error is a problem (at its byte) and gives no value; a key that appears twice in
// one object is a problem too, but the value is still returned (the later duplicate wins) so that the rest of
// it can be checked.
ParsedJson parse_json_refusing_duplicates(std::string_view text, std::string_view subject, const std::string& file,
                                          std::uint64_t text_offset, Problems& problems);

// `text` as a JSON string literal, e.g. "a\u0000b": tensor names may hold quotes, NUL or line breaks.
std::string json_quoted(std::string_view text);

// A JSON value for a message: its compact text, cut to a few dozen characters.
std::string brief(const nlohmann::json& value);

}  // namespace tensorfs::safetensors
