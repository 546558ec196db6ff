// Small safetensors files written on the fly for the rule tests, in a temporary folder removed afterwards.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "format/formats.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs::test {

class TempFolder {
public:
    TempFolder() {
        std::string pattern = (std::filesystem::temp_directory_path() / "tensorfs-st-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~TempFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempFolder(const TempFolder&) = delete;
    TempFolder& operator=(const TempFolder&) = delete;

    const std::filesystem::path& path() const { return path_; }

    // Writes `bytes` to `name` inside the folder and returns its path.
    std::string write(const std::string& name, const std::string& bytes) const {
        const auto file = path_ / name;
        std::filesystem::create_directories(file.parent_path());
        std::ofstream out(file, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        return file.string();
    }

private:
    std::filesystem::path path_;
};

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
    } catch (const InvalidSource& error) {
        std::string lines;
        for (const auto& problem : error.problems()) lines += problem.line() + "\n";
        return lines;
    }
    return "";
}

}  // namespace tensorfs::test
