#include "xml.hpp"

#include <charconv>
#include <cstdint>

namespace tensorfs::remote {
namespace {

constexpr int kMaxDepth = 32;
// A ListObjectsV2 page holds at most 1,000 entries of a dozen elements each: a document with many more is not one
// of S3's, and refusing it bounds the tree's memory (about 100 bytes per element) whatever the input.
constexpr std::size_t kMaxElements = 100'000;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

void append_utf8(std::string& out, std::uint32_t code) {
    if (code < 0x80) {
        out += static_cast<char>(code);
    } else if (code < 0x800) {
        out += static_cast<char>(0xC0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        out += static_cast<char>(0xE0 | (code >> 12));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code >> 18));
        out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    }
}

class Reader {
public:
    explicit Reader(std::string_view text) : text_(text) {}

    XmlElement document() {
        skip_misc();
        if (!at("<")) fail("no root element");
        XmlElement root;
        element(root, 1);
        skip_misc();
        if (pos_ != text_.size()) fail("text after the root element");
        return root;
    }

private:
    [[noreturn]] void fail(const std::string& what) const { throw XmlError("malformed XML: " + what, pos_); }

    bool at(std::string_view what) const { return text_.substr(pos_).starts_with(what); }

    // Moves past the next `end`, failing at the end of the text.
    void skip_past(std::string_view end, const char* what) {
        const std::size_t found = text_.find(end, pos_);
        if (found == std::string_view::npos) fail(std::string("unterminated ") + what);
        pos_ = found + end.size();
    }

    // Whitespace, comments and processing instructions (the XML declaration among them) between elements.
    void skip_misc() {
        for (;;) {
            while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
            if (at("<?")) {
                skip_past("?>", "processing instruction");
            } else if (at("<!--")) {
                skip_past("-->", "comment");
            } else if (at("<!")) {
                fail("document type declarations are not read");
            } else {
                return;
            }
        }
    }

    std::string name() {
        const std::size_t start = pos_;
        while (pos_ < text_.size() && !is_space(text_[pos_]) && text_[pos_] != '>' && text_[pos_] != '/') ++pos_;
        std::string_view whole = text_.substr(start, pos_ - start);
        if (whole.empty()) fail("an element without a name");
        if (const std::size_t colon = whole.rfind(':'); colon != std::string_view::npos) whole.remove_prefix(colon + 1);
        return std::string(whole);
    }

    // After the name: attributes up to '>' (false) or '/>' (true: the element is empty).
    bool skip_attributes() {
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c == '"' || c == '\'') {
                const std::size_t close = text_.find(c, pos_ + 1);
                if (close == std::string_view::npos) fail("unterminated attribute value");
                pos_ = close + 1;
            } else if (c == '>') {
                ++pos_;
                return false;
            } else if (c == '/' && at("/>")) {
                pos_ += 2;
                return true;
            } else {
                ++pos_;
            }
        }
        fail("unterminated start tag");
    }

    // `text_[pos_]` is '<' of a start tag.
    void element(XmlElement& element, int depth) {
        if (depth > kMaxDepth) fail("elements nested more than " + std::to_string(kMaxDepth) + " deep");
        if (++elements_ > kMaxElements) fail("more than " + std::to_string(kMaxElements) + " elements");
        ++pos_;
        element.name = name();
        if (skip_attributes()) return;
        for (;;) {
            const std::size_t lt = text_.find('<', pos_);
            if (lt == std::string_view::npos) fail("element <" + element.name + "> is not closed");
            decode(text_.substr(pos_, lt - pos_), element.text);
            pos_ = lt;
            if (at("</")) {
                pos_ += 2;
                if (name() != element.name) fail("</…> does not close <" + element.name + ">");
                while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
                if (!at(">")) fail("unterminated end tag");
                ++pos_;
                return;
            }
            if (at("<![CDATA[")) {
                const std::size_t start = pos_ + 9;
                skip_past("]]>", "CDATA section");
                element.text.append(text_.substr(start, pos_ - 3 - start));
            } else if (at("<!--")) {
                skip_past("-->", "comment");
            } else if (at("<?")) {
                skip_past("?>", "processing instruction");
            } else if (at("<!")) {
                fail("declarations inside an element");
            } else {
                element.children.emplace_back();
                this->element(element.children.back(), depth + 1);
            }
        }
    }

    // Appends `raw` to `out` with its entity and character references replaced.
    void decode(std::string_view raw, std::string& out) const {
        for (std::size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] != '&') {
                out += raw[i];
                continue;
            }
            const std::size_t semicolon = raw.find(';', i);
            if (semicolon == std::string_view::npos) fail("'&' without ';'");
            const std::string_view entity = raw.substr(i + 1, semicolon - i - 1);
            if (entity == "lt") out += '<';
            else if (entity == "gt") out += '>';
            else if (entity == "amp") out += '&';
            else if (entity == "quot") out += '"';
            else if (entity == "apos") out += '\'';
            else if (entity.starts_with('#')) append_utf8(out, code_point(entity.substr(1)));
            else fail("unknown entity &" + std::string(entity) + ";");
            i = semicolon;
        }
    }

    // The character of a reference's digits ("233" or "xE9").
    std::uint32_t code_point(std::string_view digits) const {
        const bool hex = digits.starts_with('x');
        if (hex) digits.remove_prefix(1);
        std::uint32_t code = 0;
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), code, hex ? 16 : 10);
        if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || code == 0 ||
            code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
            fail("bad character reference");
        }
        return code;
    }

    std::string_view text_;
    std::size_t pos_ = 0;
    std::size_t elements_ = 0;
};

}  // namespace

const XmlElement* XmlElement::child(std::string_view wanted) const {
    for (const auto& element : children) {
        if (element.name == wanted) return &element;
    }
    return nullptr;
}

std::optional<std::string> XmlElement::child_text(std::string_view wanted) const {
    const XmlElement* found = child(wanted);
    if (found == nullptr) return std::nullopt;
    return found->text;
}

XmlElement parse_xml(std::string_view text) { return Reader(text).document(); }

}  // namespace tensorfs::remote
