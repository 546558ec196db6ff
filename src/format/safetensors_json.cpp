#include "safetensors_json.hpp"

#include <unordered_set>
#include <vector>

namespace tensorfs::safetensors {
namespace {

// serde_json, which the reference parses with, refuses JSON nested this deep; a limit here also keeps a
// pathological "[[[[…" header from building a deep document.
constexpr int kMaxNesting = 127;

struct TooDeep {};

// What the parser callback knows about one open object or array.
struct OpenValue {
    bool is_object;
    std::string name;  // the key this value was found under ("" at the top and inside arrays)
    std::unordered_set<std::string> keys;
};

// The message of a nlohmann exception without its "[json.exception.NAME.ID] " prefix.
std::string without_exception_id(const nlohmann::json::exception& error) {
    const std::string text = error.what();
    const auto end = text.find("] ");
    return end == std::string::npos ? text : text.substr(end + 2);
}

bool is_continuation(unsigned char byte) { return (byte & 0xC0u) == 0x80u; }

// The text after "parse error at line L, column C: " in a nlohmann parse_error message.
std::string describe(const nlohmann::json::parse_error& error) {
    const std::string text = error.what();
    const auto column = text.find("column ");
    const auto colon = column == std::string::npos ? std::string::npos : text.find(": ", column);
    return colon == std::string::npos ? text : text.substr(colon + 2);
}

}  // namespace

std::optional<std::size_t> find_invalid_utf8(std::string_view text) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t size = text.size();
    std::size_t i = 0;
    while (i < size) {
        const unsigned char lead = bytes[i];
        if (lead < 0x80) {
            ++i;
            continue;
        }
        std::size_t length;
        unsigned char second_min = 0x80, second_max = 0xBF;
        if (lead >= 0xC2 && lead <= 0xDF) {
            length = 2;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            length = 3;
            if (lead == 0xE0) second_min = 0xA0;  // overlong
            if (lead == 0xED) second_max = 0x9F;  // UTF-16 surrogates
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            length = 4;
            if (lead == 0xF0) second_min = 0x90;  // overlong
            if (lead == 0xF4) second_max = 0x8F;  // past U+10FFFF
        } else {
            return i;
        }
        if (size - i < length || bytes[i + 1] < second_min || bytes[i + 1] > second_max) return i;
        for (std::size_t k = 2; k < length; ++k) {
            if (!is_continuation(bytes[i + k])) return i;
        }
        i += length;
    }
    return std::nullopt;
}

ParsedJson parse_json_refusing_duplicates(std::string_view text, std::string_view subject, const std::string& file,
                                          std::uint64_t text_offset, Problems& problems) {
    using Event = nlohmann::json::parse_event_t;
    ParsedJson result;
    std::vector<OpenValue> open;
    std::string last_key;
    auto callback = [&](int depth, Event event, nlohmann::json& parsed) {
        switch (event) {
            case Event::object_start:
            case Event::array_start: {
                if (depth >= kMaxNesting) throw TooDeep{};
                const bool inside_object = !open.empty() && open.back().is_object;
                open.push_back(OpenValue{event == Event::object_start, inside_object ? last_key : "", {}});
                break;
            }
            case Event::object_end:
            case Event::array_end:
                open.pop_back();
                break;
            case Event::key: {
                last_key = parsed.get<std::string>();
                if (!open.back().keys.insert(last_key).second) {
                    result.duplicate_keys = true;
                    const std::string& owner = open.back().name;
                    problems.add(file,
                                 "JSON key " + json_quoted(last_key) + " appears twice in the " + std::string(subject) +
                                     (owner.empty() ? std::string() : ", in the object of " + json_quoted(owner)));
                }
                break;
            }
            case Event::value:
                break;
        }
        return true;
    };
    try {
        result.value = nlohmann::json::parse(text.begin(), text.end(), callback);
    } catch (const nlohmann::json::parse_error& error) {
        const std::uint64_t position = error.byte > 0 ? error.byte - 1 : 0;
        problems.add(file, std::string(subject) + " is not valid JSON: " + describe(error), text_offset + position);
    } catch (const nlohmann::json::exception& error) {
        // A number too large even for a double (1e400): serde_json refuses it as well.
        problems.add(file, std::string(subject) + " is not valid JSON: " + without_exception_id(error), text_offset);
    } catch (const TooDeep&) {
        problems.add(file, std::string(subject) + " nests JSON deeper than " + std::to_string(kMaxNesting) + " levels",
                     text_offset);
    }
    return result;
}

std::string json_quoted(std::string_view text) {
    return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string brief(const nlohmann::json& value) {
    constexpr std::size_t kMaxChars = 48;
    // ASCII only, so that the cut cannot split a UTF-8 sequence.
    std::string text = value.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
    if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
    return text;
}

}  // namespace tensorfs::safetensors
