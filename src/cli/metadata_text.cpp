#include "metadata_text.hpp"

#include <algorithm>
#include <charconv>

#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

constexpr std::size_t kStringCharacters = 80;       // a top-level string longer than this is cut
constexpr std::size_t kItemCharacters = 40;         // a string inside an array longer than this is cut
constexpr std::size_t kWholeArrayCharacters = 100;  // an array is shown whole when it fits in this
constexpr std::size_t kPreviewCharacters = 60;      // else its first items, up to about this much text
constexpr std::size_t kPreviewItems = 8;            // and at most this many

// "ARRAY[FLOAT32]" -> "FLOAT32"; anything else unchanged.
std::string_view element_type(std::string_view gguf_type) {
    if (gguf_type.starts_with("ARRAY[") && gguf_type.ends_with("]")) return gguf_type.substr(6, gguf_type.size() - 7);
    return gguf_type;
}

std::string shortest_text(double value, std::string_view gguf_type) {
    char text[64];
    const auto result = gguf_type == "FLOAT32"
                            ? std::to_chars(text, text + sizeof text, static_cast<float>(value))
                            : std::to_chars(text, text + sizeof text, value);
    return std::string(text, result.ptr);
}

std::string array_text(const nlohmann::ordered_json& array, std::string_view item_type);

// A value inside an array: strings quoted and cut shorter.
std::string item_text(const nlohmann::ordered_json& item, std::string_view gguf_type) {
    if (item.is_string()) {
        const auto& text = item.get_ref<const std::string&>();
        const std::string_view kept = first_characters(text, kItemCharacters);
        return quoted(kept) + (kept.size() < text.size() ? "..." : "");
    }
    if (item.is_array()) return array_text(item, element_type(gguf_type));
    if (item.is_number_float()) return shortest_text(item.get<double>(), gguf_type);
    return visible(item.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

std::string array_text(const nlohmann::ordered_json& array, std::string_view item_type) {
    std::vector<std::string> items;
    std::size_t length = 0;
    for (const auto& item : array) {
        items.push_back(item_text(item, item_type));
        length += items.back().size() + 2;
        if (length > kWholeArrayCharacters) break;
    }
    auto join = [](const std::vector<std::string>& parts, std::size_t count) {
        std::string text;
        for (std::size_t i = 0; i < count; ++i) text += (i > 0 ? ", " : "") + parts[i];
        return text;
    };
    if (items.size() == array.size() && length <= kWholeArrayCharacters) return "[" + join(items, items.size()) + "]";
    // Here the array is not empty: at least its first item is shown.
    std::size_t shown = 1;
    std::size_t preview = items[0].size();
    while (shown < std::min(items.size(), kPreviewItems) && preview + 2 + items[shown].size() <= kPreviewCharacters) {
        preview += 2 + items[shown].size();
        ++shown;
    }
    return "[" + std::to_string(array.size()) + " items: " + join(items, shown) + ", ...]";
}

}  // namespace

std::string metadata_value_text(const nlohmann::ordered_json& value, std::string_view gguf_type) {
    if (value.is_string()) {
        const auto& text = value.get_ref<const std::string&>();
        if (text.empty()) return "\"\"";
        const std::string_view kept = first_characters(text, kStringCharacters);
        if (kept.size() == text.size()) return visible(text);
        return visible(kept) + "... (" + std::to_string(text.size()) + " bytes)";
    }
    if (value.is_array()) return array_text(value, element_type(gguf_type));
    return item_text(value, gguf_type);
}

}  // namespace tensorfs::cli
