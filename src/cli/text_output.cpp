#include "text_output.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>

namespace tensorfs::cli {
namespace {

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// One decimal below 100 of a unit, none above: "1.5 GiB", "512.0 KiB" would be noise, "512 KiB" is not.
std::string scaled(double value, const char* unit) {
    char text[32];
    std::snprintf(text, sizeof text, value < 100 ? "%.1f %s" : "%.0f %s", value, unit);
    return text;
}

void append_escaped(std::string& out, char c, bool escape_quotes) {
    switch (c) {
        case '\n': out += "\\n"; return;
        case '\t': out += "\\t"; return;
        case '\r': out += "\\r"; return;
        case '"':
        case '\\':
            if (escape_quotes) out += '\\';
            out += c;
            return;
        default: break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02X", byte);
        out += hex;
    } else {
        out += c;
    }
}

}  // namespace

std::string human_size(std::uint64_t bytes) {
    static constexpr std::array<const char*, 6> kUnits = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) return std::to_string(bytes) + " B";
    double value = static_cast<double>(bytes) / 1024;
    std::size_t unit = 0;
    while (value >= 1024 && unit + 1 < kUnits.size()) {
        value /= 1024;
        ++unit;
    }
    return scaled(value, kUnits[unit]);
}

std::string short_count(std::uint64_t count) {
    static constexpr std::array<const char*, 5> kUnits = {"K", "M", "B", "T", "Q"};
    if (count < 1000) return std::to_string(count);
    double value = static_cast<double>(count) / 1000;
    std::size_t unit = 0;
    while (value >= 1000 && unit + 1 < kUnits.size()) {
        value /= 1000;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, value < 10 ? "%.2f %s" : value < 100 ? "%.1f %s" : "%.0f %s", value,
                  kUnits[unit]);
    return text;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) text += ", ";
        text += std::to_string(shape[i]);
    }
    return text + "]";
}

std::string visible(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) append_escaped(out, c, false);
    return out;
}

std::string quoted(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) append_escaped(out, c, true);
    return out + "\"";
}

std::string_view first_characters(std::string_view text, std::size_t limit) {
    std::size_t characters = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (is_continuation_byte(text[i])) continue;
        if (characters == limit) return text.substr(0, i);
        ++characters;
    }
    return text;
}

std::size_t display_width(std::string_view text) {
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return !is_continuation_byte(c);
    }));
}

Table::Table(std::vector<Align> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
    if (cells.size() != columns_.size()) throw std::logic_error("table row with the wrong number of cells");
    rows_.push_back(std::move(cells));
}

std::string Table::render() const {
    std::vector<std::size_t> widths(columns_.size(), 0);
    for (const auto& row : rows_) {
        for (std::size_t column = 0; column < row.size(); ++column) {
            widths[column] = std::max(widths[column], display_width(row[column]));
        }
    }
    std::string out;
    for (const auto& row : rows_) {
        std::string line;
        for (std::size_t column = 0; column < row.size(); ++column) {
            const std::string& cell = row[column];
            const std::size_t padding = widths[column] - display_width(cell);
            const bool last = column + 1 == row.size();
            if (column > 0) line += "  ";
            if (columns_[column] == Align::Right) line.append(padding, ' ');
            line += cell;
            if (columns_[column] == Align::Left && !last) line.append(padding, ' ');
        }
        // An empty last cell would leave the padding of the cells before it at the end of the line.
        if (row.back().empty()) {
            while (!line.empty() && line.back() == ' ') line.pop_back();
        }
        out += line;
        out += '\n';
    }
    return out;
}

}  // namespace tensorfs::cli
