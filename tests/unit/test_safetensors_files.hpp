// Small safetensors files written on the fly for the rule tests, in a temporary folder removed afterwards.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "format/formats.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/local_folder.hpp"
#include "tensorfs/open_source.hpp"
#include "temp_folder.hpp"

namespace tensorfs::test {

// A safetensors file: the 8-byte little-endian length, `header` exactly as given, then `data`.
inline std::string safetensors_bytes(const std::string& header, const std::string& data) {
    std::string bytes(8, '\0');
    std::uint64_t length = header.size();
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
    return bytes + header + data;
}

// The problem lines of a refused source, one per line; "" when it was accepted.
template <typename Open>
std::string refusal_of(Open&& open) {
    try {
        open();
    } catch (const SourceError& error) {
        std::string lines;
        for (const auto& problem : error.problems()) lines += problem.line() + "\n";
        return lines;
    }
    return "";
}

}  // namespace tensorfs::test
