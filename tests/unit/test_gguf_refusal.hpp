// Checks that opening a GGUF source is refused with a message that says what is wrong.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <boost/test/unit_test.hpp>

#include "tensorfs/errors.hpp"
#include "tensorfs/open_source.hpp"

namespace tensorfs::test {

// Opens `path` and expects SourceError with a problem whose message contains `fragment`, for `file` (when
// given) and at byte `at_byte` (when given). Returns that problem, or nullopt after failing the test.
inline std::optional<Problem> expect_gguf_refused(const std::filesystem::path& path, const std::string& fragment,
                                                  std::optional<std::uint64_t> at_byte = std::nullopt,
                                                  std::optional<std::string> file = std::nullopt) {
    std::string all;
    std::optional<Problem> found;
    try {
        open_catalog(path);
        all = " (accepted)";
    } catch (const SourceError& invalid) {
        for (const auto& problem : invalid.problems()) {
            all += "\n  " + problem.line();
            if (!found && problem.what.find(fragment) != std::string::npos) found = problem;
        }
    }
    BOOST_CHECK_MESSAGE(found, path.string() << ": expected a refusal saying '" << fragment << "'; got:" << all);
    if (!found) return found;
    BOOST_TEST_MESSAGE(path.filename().string() << " refused: " << found->line());
    if (at_byte) BOOST_CHECK_MESSAGE(found->at_byte == at_byte, found->line() << ": expected at byte " << *at_byte);
    if (file) BOOST_CHECK_EQUAL(found->file, *file);
    return found;
}

}  // namespace tensorfs::test
