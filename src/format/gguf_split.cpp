#include "gguf_split.hpp"

#include <charconv>
#include <cstdio>
#include <filesystem>

#include "tensorfs/errors.hpp"
#include "tensorfs/in_parallel.hpp"

namespace tensorfs::gguf {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kSuffix = ".gguf";
constexpr std::string_view kOf = "-of-";
constexpr std::size_t kMinDigits = 5;
// split.count is a UINT16 in llama.cpp; the bound also keeps a forged count from making us look for 2^62 files.
constexpr std::int64_t kMaxParts = 65535;

std::optional<std::uint64_t> parse_number(std::string_view digits) {
    if (digits.size() < kMinDigits) return std::nullopt;
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    return value;
}

// The split keys of one part; every one is required once split.count says there are several parts.
struct SplitKeys {
    std::int64_t no = 0;
    std::int64_t count = 0;
    std::int64_t tensors_count = 0;
};

std::int64_t required_integer(const GgufFile& file, const std::string& key) {
    const auto value = integer_value(file.metadata, key, file.path);
    if (!value || *value < 0) {
        Problems problems;
        problems.add(file.path, value ? "metadata key " + in_quotes(key) + " is negative: " + std::to_string(*value)
                                      : "has no " + key + ", which every part of a split model carries");
        problems.throw_if_any();
    }
    return *value;
}

SplitKeys split_keys(const GgufFile& file) {
    return SplitKeys{required_integer(file, "split.no"), required_integer(file, "split.count"),
                     required_integer(file, "split.tensors.count")};
}

}  // namespace

std::optional<SplitName> parse_split_name(std::string_view file_name) {
    if (file_name.size() <= kSuffix.size() || !file_name.ends_with(kSuffix)) return std::nullopt;
    const std::string_view stem = file_name.substr(0, file_name.size() - kSuffix.size());
    const std::size_t of = stem.rfind(kOf);
    if (of == std::string_view::npos) return std::nullopt;
    const std::size_t dash = stem.rfind('-', of == 0 ? 0 : of - 1);
    if (dash == std::string_view::npos || dash == 0 || dash >= of) return std::nullopt;
    const auto part = parse_number(stem.substr(dash + 1, of - dash - 1));
    const auto count = parse_number(stem.substr(of + kOf.size()));
    if (!part || !count) return std::nullopt;
    return SplitName{std::string(stem.substr(0, dash)), *part, *count};
}

std::string split_file_name(std::string_view prefix, std::uint64_t part, std::uint64_t count) {
    char numbers[64];
    std::snprintf(numbers, sizeof numbers, "-%05llu-of-%05llu", static_cast<unsigned long long>(part),
                  static_cast<unsigned long long>(count));
    return std::string(prefix) + numbers + std::string(kSuffix);
}

bool is_split_part(const GgufFile& file, const std::string& path) {
    const auto count = integer_value(file.metadata, "split.count", path);
    return count && *count > 1;
}

std::vector<GgufFile> read_split_parts(GgufFile given, const SourceFolder& folder, const std::string& given_name) {
    const SplitKeys keys = split_keys(given);
    const fs::path given_path(given_name);
    const std::string file_name = given_path.filename().string();
    const std::string& given_full_name = given.path;
    const auto name = parse_split_name(file_name);
    const auto expected_name = [&](const std::string& prefix) {
        return split_file_name(prefix, static_cast<std::uint64_t>(keys.no) + 1,
                               static_cast<std::uint64_t>(keys.count));
    };
    if (keys.count > kMaxParts) {
        Problems problems;
        problems.add(given.path, "split.count = " + std::to_string(keys.count) + " is more than " +
                                     std::to_string(kMaxParts) + " parts");
        problems.throw_if_any();
    }
    if (keys.no >= keys.count || !name || file_name != expected_name(name->prefix)) {
        Problems problems;
        problems.add(given.path, "carries split.no = " + std::to_string(keys.no) + " and split.count = " +
                                     std::to_string(keys.count) + ", so its name should be NAME-" +
                                     expected_name("").substr(1) + ", as llama.cpp's gguf-split names parts");
        problems.throw_if_any();
    }

    // Part k (from 1) goes to parts[k - 1]; a missing or broken part leaves an empty GgufFile (no object).
    const auto count = static_cast<std::uint64_t>(keys.count);
    std::vector<GgufFile> parts(count);
    std::vector<Problems> found(count);
    in_parallel(count, folder.parallel_reads(), [&](std::size_t index) {
        const std::uint64_t part = index + 1;
        if (part == name->part) return;
        const std::string relative = (given_path.parent_path() / split_file_name(name->prefix, part, count)).string();
        Problems& problems = found[index];
        try {
            auto object = folder.open_if_exists(relative);
            if (object == nullptr) {
                problems.add(folder.name_of(relative), "part " + std::to_string(part) + " of " +
                                                           std::to_string(count) +
                                                           " of the split model is missing (given: " +
                                                           given_full_name + ")");
                return;
            }
            GgufFile file = read_gguf_file(std::move(object));
            const SplitKeys its = split_keys(file);
            if (its.count != keys.count || its.no != static_cast<std::int64_t>(part - 1) ||
                its.tensors_count != keys.tensors_count) {
                problems.add(file.path, "is not part " + std::to_string(part) + " of the split model of " +
                                            given_full_name + ": it says split.no = " + std::to_string(its.no) +
                                            ", split.count = " + std::to_string(its.count) +
                                            ", split.tensors.count = " + std::to_string(its.tensors_count) +
                                            " where this part must say " + std::to_string(part - 1) + ", " +
                                            std::to_string(keys.count) + ", " + std::to_string(keys.tensors_count));
                return;
            }
            parts[index] = std::move(file);
        } catch (const SourceError& invalid) {
            problems.add_all(invalid);
        }
    });
    Problems problems;
    for (auto& part_problems : found) problems.add_all(std::move(part_problems));
    std::uint64_t tensors_in_parts = given.tensors.size();
    for (const auto& part : parts) tensors_in_parts += part.tensors.size();
    parts[name->part - 1] = std::move(given);
    if (problems.empty() && tensors_in_parts != static_cast<std::uint64_t>(keys.tensors_count)) {
        problems.add(parts.front().path, "split.tensors.count says " + std::to_string(keys.tensors_count) +
                                             " tensors but the " + std::to_string(count) + " parts hold " +
                                             std::to_string(tensors_in_parts));
    }
    problems.throw_if_any();
    return parts;
}

}  // namespace tensorfs::gguf
