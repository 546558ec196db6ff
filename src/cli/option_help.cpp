#include "option_help.hpp"

#include <string_view>

#include "tensorfs/settings.hpp"

namespace tensorfs::cli {
namespace {

constexpr std::size_t kIndent = 23;   // under "  -o OPT[,OPT...]    "
constexpr std::size_t kTextColumn = kIndent + 18;
constexpr std::size_t kWidth = 116;

// `text` broken at spaces into lines that end before kWidth, the first one starting at `column` of `line`, the
// others at kTextColumn.
void append_wrapped(std::string& out, std::string line, std::string_view text) {
    std::size_t column = line.size();
    while (!text.empty()) {
        std::size_t end = text.size();
        if (column + end > kWidth) {
            end = text.rfind(' ', kWidth - column);
            if (end == std::string_view::npos || end == 0) end = text.find(' ');
            if (end == std::string_view::npos) end = text.size();
        }
        line += text.substr(0, end);
        out += line + "\n";
        text.remove_prefix(std::min(text.size(), end + 1));
        line.assign(kTextColumn, ' ');
        column = kTextColumn;
    }
}

}  // namespace

std::string tensorfs_options_help() {
    std::string out;
    std::string daemon_options;
    for (const OptionInfo& option : tensorfs_options()) {
        const std::string usage = std::string(option.name) + "=" + std::string(option.value);
        if (option.use == OptionUse::Daemon) {
            daemon_options += (daemon_options.empty() ? "" : ", ") + usage;
            continue;
        }
        std::string line(kIndent, ' ');
        line += usage;
        line += std::string(line.size() < kTextColumn ? kTextColumn - line.size() : 1, ' ');
        if (line.size() > kTextColumn) {  // a long usage: the text goes on the next line
            out += line.substr(0, line.size() - 1) + "\n";
            line.assign(kTextColumn, ' ');
        }
        append_wrapped(out, line, option.help);
    }
    append_wrapped(out, std::string(kIndent, ' '),
                   "set by the CSI plugin for the daemons it starts: " + daemon_options);
    return out;
}

}  // namespace tensorfs::cli
