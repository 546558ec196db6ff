#include "safetensors_json.hpp"

#include <unordered_set>
#include <vector>

#include <simdjson.h>

namespace tensorfs::safetensors {
namespace {

// serde_json, which the reference parses with, refuses JSON nested this deep; the limit also keeps a
// pathological "[[[[…" header from building a deep document.
constexpr std::size_t kMaxNesting = 127;

bool is_continuation(unsigned char byte) { return (byte & 0xC0u) == 0x80u; }

// The reason in a nlohmann exception message: the text after "column C: " of a parse error, else the text after
// the "[json.exception.NAME.ID] " prefix (as for out_of_range "number overflow parsing '1e400'").
std::string reason_of(const nlohmann::json::exception& error) {
    const std::string text = error.what();
    const auto column = text.find("column ");
    const auto colon = column == std::string::npos ? std::string::npos : text.find(": ", column);
    if (colon != std::string::npos) return text.substr(colon + 2);
    const auto prefix_end = text.find("] ");
    return prefix_end == std::string::npos ? text : text.substr(prefix_end + 2);
}

// A first, DOM-less pass over the text: syntax errors with their byte, nesting depth, and keys that appear twice
// in one object. (nlohmann's parser callback could see keys too, but its DOM builder rescans the enclosing
// object at every end of a child object, which is quadratic in the number of tensors.)
class JsonChecker final : public nlohmann::json_sax<nlohmann::json> {
public:
    JsonChecker(std::string_view subject, const std::string& file, std::uint64_t text_offset, Problems& problems)
        : subject_(subject), file_(file), text_offset_(text_offset), problems_(problems) {}

    bool duplicate_keys() const { return duplicate_keys_; }

    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }

    bool start_object(std::size_t) override { return open(true); }
    bool start_array(std::size_t) override { return open(false); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }

    bool key(string_t& key) override {
        OpenValue& object = open_.back();
        if (!object.keys.insert(key).second) {
            duplicate_keys_ = true;
            problems_.add(file_,
                          "JSON key " + json_quoted(key) + " appears twice in the " + std::string(subject_) +
                              (object.name.empty() ? std::string() : ", in the object of " + json_quoted(object.name)));
        }
        last_key_ = key;
        return true;
    }

    bool parse_error(std::size_t position, const std::string&, const nlohmann::json::exception& error) override {
        problems_.add(file_, std::string(subject_) + " is not valid JSON: " + reason_of(error),
                      text_offset_ + (position > 0 ? position - 1 : 0));
        return false;
    }

private:
    // One object or array that has begun and not yet ended.
    struct OpenValue {
        bool is_object;
        std::string name;  // the key it was found under ("" at the top and inside arrays)
        std::unordered_set<std::string> keys;
    };

    bool open(bool is_object) {
        if (open_.size() >= kMaxNesting) {
            problems_.add(file_,
                          std::string(subject_) + " nests JSON deeper than " + std::to_string(kMaxNesting) + " levels",
                          text_offset_);
            return false;
        }
        const bool inside_object = !open_.empty() && open_.back().is_object;
        open_.push_back(OpenValue{is_object, inside_object ? last_key_ : std::string(), {}});
        return true;
    }
    bool close() {
        open_.pop_back();
        return true;
    }

    std::string_view subject_;
    const std::string& file_;
    std::uint64_t text_offset_;
    Problems& problems_;
    std::vector<OpenValue> open_;
    std::string last_key_;
    bool duplicate_keys_ = false;
};

}  // namespace

std::optional<std::size_t> find_invalid_utf8(std::string_view text) {
    // simdjson checks the same rules (RFC 3629) many bytes at a time; the loop below finds where a check failed.
    if (simdjson::validate_utf8(text.data(), text.size())) return std::nullopt;
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
    JsonChecker checker(subject, file, text_offset, problems);
    ParsedJson result;
    if (!nlohmann::json::sax_parse(text.begin(), text.end(), &checker)) return result;
    result.duplicate_keys = checker.duplicate_keys();
    // The checker has seen the whole text parse, so this second pass cannot fail.
    result.value = nlohmann::json::parse(text.begin(), text.end());
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
