// Plain text for people: sizes in binary units, counts, shapes, names with control bytes made visible, and
// tables whose columns line up.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tensorfs::cli {

// "512 B", "6.0 KiB", "1.5 GiB" (powers of 1024, as the size options take them).
std::string human_size(std::uint64_t bytes);

// "950", "1.2 K", "7.24 M", "70.6 B": the way model sizes are spoken of.
std::string short_count(std::uint64_t count);

// "[4096, 4096]"; "[]" for a scalar.
std::string shape_text(const std::vector<std::uint64_t>& shape);

// The text with control bytes written as \n, \t, \r or \xNN, so that one value stays on one line.
std::string visible(std::string_view text);

// Like visible(), between double quotes, with `"` and `\` escaped too.
std::string quoted(std::string_view text);

// At most `limit` characters (UTF-8 code points) of the text, never splitting a character.
std::string_view first_characters(std::string_view text, std::size_t limit);

// Characters a terminal shows for the text, counting each UTF-8 code point as one.
std::size_t display_width(std::string_view text);

enum class Align { Left, Right };

// Rows of cells printed with two spaces between columns; the last column is never padded.
class Table {
public:
    explicit Table(std::vector<Align> columns);

    void add_row(std::vector<std::string> cells);
    std::string render() const;

private:
    std::vector<Align> columns_;
    std::vector<std::vector<std::string>> rows_;
};

}  // namespace tensorfs::cli
