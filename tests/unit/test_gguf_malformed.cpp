// Every GGUF file of the malformed corpus (tests/data/vectors/malformed, see its README) gets the outcome the
// README names: ok_base is accepted, every other file is refused with a message that says what is wrong.
#include <boost/test/unit_test.hpp>

#include <map>
#include <string>

#include "test_gguf_refusal.hpp"
#include "vectors.hpp"

using namespace tensorfs;

namespace {

struct Refusal {
    std::string says;                        // a fragment of the message
    std::optional<std::uint64_t> at_byte;    // where it points, when the rule has one obvious place
};

// What each refused file of the corpus must be told, by file name.
const std::map<std::string, Refusal>& refusals() {
    static const std::map<std::string, Refusal> table{
        {"bad_magic.gguf", {"bad magic 'GGUX', expected 'GGUF'", 0}},
        {"version_1.gguf", {"GGUF version 1 is obsolete", 4}},
        {"version_4.gguf", {"GGUF version 4 is not supported", 4}},
        {"tensor_count_huge.gguf", {"tensor count 1152921504606846976 cannot be true", 8}},
        {"kv_count_huge.gguf", {"key/value count 1152921504606846976 cannot be true", 16}},
        {"string_length_huge.gguf", {"claims 4611686018427387904 bytes", std::nullopt}},
        {"n_dims_5.gguf", {"has 5 dimensions; GGUF allows at most 4", std::nullopt}},
        {"unknown_type_id.gguf", {"unknown ggml type id 99", std::nullopt}},
        {"offset_not_aligned.gguf", {"not a multiple of the alignment 32", std::nullopt}},
        {"tensor_past_eof.gguf", {"runs past the end of the file", std::nullopt}},
        {"truncated.gguf", {"runs past the end of the file", std::nullopt}},
        {"alignment_zero.gguf", {"general.alignment = 0 is not a non-zero power of two", std::nullopt}},
        {"alignment_not_pow2.gguf", {"general.alignment = 48 is not a non-zero power of two", std::nullopt}},
        {"ne0_not_block_multiple.gguf", {"has ne[0] = 48, not a multiple of its block size 32", std::nullopt}},
        {"empty.gguf", {"empty file", 0}},
    };
    return table;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gguf_malformed)

BOOST_AUTO_TEST_CASE(every_gguf_file_gets_its_outcome) {
    std::size_t seen = 0;
    for (const auto& entry : test::manifest()["malformed"]) {
        if (entry["format"] != "gguf") continue;
        ++seen;
        const std::string relative = entry["file"];
        const auto path = test::vectors_path(relative);
        const std::string name = std::filesystem::path(relative).filename().string();
        BOOST_TEST_CONTEXT(name << " (" << entry["description"].get<std::string>() << ")") {
            if (entry["expected"] == "must be accepted") {
                const Catalog catalog = open_catalog(path);
                BOOST_CHECK_EQUAL(catalog.tensors.size(), 3u);
                continue;
            }
            BOOST_REQUIRE_EQUAL(entry["expected"].get<std::string>(), "must be rejected with a clear error");
            const auto rule = refusals().find(name);
            BOOST_REQUIRE_MESSAGE(rule != refusals().end(), "no expectation written for " << name);
            test::expect_gguf_refused(path, rule->second.says, rule->second.at_byte, path);
        }
    }
    BOOST_CHECK_EQUAL(seen, refusals().size() + 1);
}

BOOST_AUTO_TEST_SUITE_END()
