// The XML of S3's answers, read by expat (Debian's libexpat1), with the bounds S3's documents never come near.
#include "xml.hpp"

#include <expat.h>

#include <algorithm>
#include <climits>
#include <vector>

namespace tensorfs::remote {
namespace {

constexpr int kMaxDepth = 32;
// A ListObjectsV2 page holds at most 1,000 entries of a dozen elements each: a document with many more is not one
// of S3's, and refusing it bounds the tree's memory (about 100 bytes per element) whatever the input.
constexpr std::size_t kMaxElements = 100'000;
// Bytes given to expat at a time (its length argument is an int).
constexpr std::size_t kPiece = std::size_t{1} << 20;

// What the handlers build, and why they stopped the parser when they did.
struct Builder {
    XML_Parser parser;
    XmlElement root;
    bool has_root = false;
    std::vector<XmlElement*> open;  // the root first; each one's last child is the next
    std::size_t elements = 0;
    std::string refusal;            // set when a handler stopped the parser

    void refuse(const std::string& why) {
        if (refusal.empty()) refusal = why;
        XML_StopParser(parser, XML_FALSE);
    }
};

// The name without a namespace prefix ("s3:Error" -> "Error"): S3's names are unique without it.
std::string local_name(const XML_Char* name) {
    const std::string whole(name);
    const std::size_t colon = whole.rfind(':');
    return colon == std::string::npos ? whole : whole.substr(colon + 1);
}

void XMLCALL on_start(void* data, const XML_Char* name, const XML_Char** /*attributes: S3 sends none we need*/) {
    auto& builder = *static_cast<Builder*>(data);
    if (builder.open.size() + 1 > static_cast<std::size_t>(kMaxDepth)) {
        return builder.refuse("elements nested more than " + std::to_string(kMaxDepth) + " deep");
    }
    if (++builder.elements > kMaxElements) {
        return builder.refuse("more than " + std::to_string(kMaxElements) + " elements");
    }
    XmlElement* element = nullptr;
    if (builder.open.empty()) {
        builder.has_root = true;
        element = &builder.root;
    } else {
        // Only the innermost open element gets children: the pointers to its ancestors stay valid.
        element = &builder.open.back()->children.emplace_back();
    }
    element->name = local_name(name);
    builder.open.push_back(element);
}

void XMLCALL on_end(void* data, const XML_Char* /*name: expat checked that it matches*/) {
    static_cast<Builder*>(data)->open.pop_back();
}

// Text and CDATA, with expat's references already decoded, as the element's own text.
void XMLCALL on_text(void* data, const XML_Char* text, int length) {
    auto& builder = *static_cast<Builder*>(data);
    if (!builder.open.empty()) builder.open.back()->text.append(text, static_cast<std::size_t>(length));
}

// A DTD could declare entities that expand without end: S3 sends none, so any is refused before it is read.
void XMLCALL on_doctype(void* data, const XML_Char*, const XML_Char*, const XML_Char*, int) {
    static_cast<Builder*>(data)->refuse("document type declarations are not read");
}

void XMLCALL on_entity_declaration(void* data, const XML_Char*, int, const XML_Char*, int, const XML_Char*,
                                   const XML_Char*, const XML_Char*, const XML_Char*) {
    static_cast<Builder*>(data)->refuse("entity declarations are not read");
}

class Parser {
public:
    Parser() : parser_(XML_ParserCreate("UTF-8")) {}
    ~Parser() {
        if (parser_ != nullptr) XML_ParserFree(parser_);
    }
    Parser(const Parser&) = delete;
    Parser& operator=(const Parser&) = delete;
    XML_Parser get() const { return parser_; }

private:
    XML_Parser parser_;
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

XmlElement parse_xml(std::string_view text) {
    const Parser parser;
    if (parser.get() == nullptr) throw XmlError("cannot read XML: out of memory", 0);
    Builder builder{parser.get(), {}, false, {}, 0, {}};
    XML_SetUserData(parser.get(), &builder);
    XML_SetElementHandler(parser.get(), on_start, on_end);
    XML_SetCharacterDataHandler(parser.get(), on_text);
    XML_SetStartDoctypeDeclHandler(parser.get(), on_doctype);
    XML_SetEntityDeclHandler(parser.get(), on_entity_declaration);
    std::size_t given = 0;
    bool ok = true;
    do {
        const std::size_t piece = std::min(kPiece, text.size() - given);
        const bool last = given + piece == text.size();
        ok = XML_Parse(parser.get(), text.data() + given, static_cast<int>(piece), last ? XML_TRUE : XML_FALSE) ==
             XML_STATUS_OK;
        given += piece;
    } while (ok && given < text.size());
    if (!ok || !builder.refusal.empty()) {
        const XML_Index at = XML_GetCurrentByteIndex(parser.get());
        const std::size_t byte = at < 0 ? given : std::min(static_cast<std::size_t>(at), text.size());
        const std::string why =
            builder.refusal.empty() ? XML_ErrorString(XML_GetErrorCode(parser.get())) : builder.refusal;
        throw XmlError("malformed XML: " + why, byte);
    }
    if (!builder.has_root) throw XmlError("malformed XML: no root element", text.size());
    return std::move(builder.root);
}

}  // namespace tensorfs::remote
