// The XML that S3 answers with (listings, error bodies), read by expat: elements, their text and their children;
// attributes, comments and processing instructions are dropped, CDATA kept as text. No DTD, no entities beyond
// XML's five and numeric references: S3 sends neither, and a document that does is refused.
// Bounded: nesting depth and element count are limited, so hostile input cannot take more than about 10 MB of
// memory for its tree.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tensorfs::remote {

struct XmlElement {
    std::string name;   // without a namespace prefix
    std::string text;   // the element's own text (not its children's), entities decoded
    std::vector<XmlElement> children;

    // The first child named `name`, or nullptr.
    const XmlElement* child(std::string_view name) const;
    // The text of the first child named `name`, or nullopt.
    std::optional<std::string> child_text(std::string_view name) const;
};

class XmlError : public std::runtime_error {
public:
    XmlError(const std::string& what, std::size_t at) : std::runtime_error(what), at_(at) {}
    std::size_t at() const { return at_; }  // the byte where reading stopped

private:
    std::size_t at_;
};

// The document's root element. Throws XmlError when `text` is not a well-formed document of the kind above.
XmlElement parse_xml(std::string_view text);

}  // namespace tensorfs::remote
