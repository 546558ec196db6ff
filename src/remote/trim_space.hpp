// Settings read from files and the environment (a Hub token file, AWS's config and credentials files) are compared
// without the spaces, tabs and line ends around them.
#pragma once

#include <string_view>

namespace tensorfs::remote {

inline std::string_view trim_space(std::string_view text) {
    const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!text.empty() && space(text.front())) text.remove_prefix(1);
    while (!text.empty() && space(text.back())) text.remove_suffix(1);
    return text;
}

}  // namespace tensorfs::remote
