// Replays what the fuzz targets (tests/fuzz) found, and the seed corpus they start from, through the same checks:
// every input is either refused with a problem or accepted and read back consistently, with no other exception.
// In the ASan build this also replays them under the sanitizers.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>

#include "../fuzz/fuzz_checks.hpp"
#include "format/zip_directory.hpp"
#include "tensorfs/local_folder.hpp"
#include "vectors.hpp"

namespace fs = std::filesystem;
using namespace tensorfs;

namespace {

using Check = std::function<void(const std::uint8_t*, std::size_t)>;

const std::map<std::string, Check>& checks_by_target() {
    static const std::map<std::string, Check> checks{
        {"fuzz_safetensors", fuzz::check_safetensors_file},
        {"fuzz_index", fuzz::check_safetensors_index},
        {"fuzz_gguf", fuzz::check_gguf_file},
        {"fuzz_content", fuzz::check_content},
        {"fuzz_kernels", fuzz::check_kernels},
        {"fuzz_s3_answer", fuzz::check_s3_answer},
        {"fuzz_pickle", fuzz::check_pickle},
        {"fuzz_zip", fuzz::check_pytorch_file},
        {"fuzz_quantized", fuzz::check_quantized_model},
    };
    return checks;
}

// The regular files under `folder` whose names end with one of `suffixes` (all files when empty), sorted.
std::vector<fs::path> files_under(const fs::path& folder, const std::vector<std::string>& suffixes = {}) {
    std::vector<fs::path> found;
    if (!fs::is_directory(folder)) return found;
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
        if (!entry.is_regular_file()) continue;
        const std::string name = entry.path().filename().string();
        const auto ends_name = [&](const std::string& suffix) { return name.ends_with(suffix); };
        if (suffixes.empty() || std::any_of(suffixes.begin(), suffixes.end(), ends_name)) found.push_back(entry.path());
    }
    std::sort(found.begin(), found.end());
    return found;
}

// The pickle of a PyTorch archive, as scripts/fuzz.sh gives fuzz_pickle its seeds; nullopt when the archive is
// too broken to reach it.
std::optional<std::string> data_pkl_of(const fs::path& file) {
    try {
        const auto object = LocalFolder(file.parent_path()).open(file.filename().string());
        for (const zip::Entry& entry : zip::read_directory(*object, 1)) {
            if (entry.name.ends_with("/data.pkl")) return zip::read_stored_entry(*object, entry, 1 << 20, "the pickle");
        }
    } catch (const SourceError&) {
    }
    return std::nullopt;
}

void replay(const Check& check, const fs::path& file) {
    const auto bytes = test::read_bytes(file.string());
    BOOST_TEST_CONTEXT(file.string()) {
        try {
            check(bytes.data(), bytes.size());
        } catch (const std::exception& error) {
            BOOST_ERROR("unexpected exception: " << error.what());
        }
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fuzz_regressions)

BOOST_AUTO_TEST_CASE(committed_fuzz_findings_pass_the_checks) {
    const fs::path root = test::data_path("fuzz-regressions");
    for (const auto& target : fs::directory_iterator(root)) {
        if (!target.is_directory()) continue;
        const auto check = checks_by_target().find(target.path().filename().string());
        BOOST_TEST_REQUIRE((check != checks_by_target().end()), "no fuzz target named " << target.path());
        for (const auto& file : files_under(target.path())) replay(check->second, file);
    }
}

BOOST_AUTO_TEST_CASE(seed_corpus_passes_the_checks) {
    const fs::path vectors = test::vectors_path("");
    const auto safetensors = files_under(vectors, {".safetensors"});
    const auto ggufs = files_under(vectors, {".gguf"});
    BOOST_TEST(safetensors.size() >= 20u);
    BOOST_TEST(ggufs.size() >= 20u);
    for (const auto& file : safetensors) {
        replay(fuzz::check_safetensors_file, file);
        replay(fuzz::check_content, file);
    }
    for (const auto& file : ggufs) {
        replay(fuzz::check_gguf_file, file);
        replay(fuzz::check_content, file);
        replay(fuzz::check_kernels, file);
    }
    for (const auto& file : files_under(vectors, {".index.json"})) replay(fuzz::check_safetensors_index, file);
    const auto s3_answers = files_under(test::data_path("s3"), {".xml"});
    BOOST_TEST(s3_answers.size() >= 4u);
    for (const auto& file : s3_answers) replay(fuzz::check_s3_answer, file);

    const auto checkpoints = files_under(test::data_path("pytorch/malformed"), {".pt", ".bin"});
    BOOST_TEST(checkpoints.size() >= 30u);
    std::size_t pickles = 0;
    for (const auto& file : checkpoints) {
        replay(fuzz::check_pytorch_file, file);
        replay(fuzz::check_content, file);
        if (const auto pickle = data_pkl_of(file)) {
            fuzz::check_pickle(reinterpret_cast<const std::uint8_t*>(pickle->data()), pickle->size());
            ++pickles;
        }
    }
    BOOST_TEST(pickles >= 20u);  // the seeds of fuzz_pickle

    // The seeds of fuzz_quantized: each quantized reference model's config.json and first shard, in one input.
    std::size_t quantized = 0;
    for (const auto& folder : fs::directory_iterator(test::vectors_path("hfquant"))) {
        if (!fs::exists(folder.path() / "config.json")) continue;
        const auto config = test::read_bytes((folder.path() / "config.json").string());
        const auto shard = test::read_bytes((folder.path() / "model-00001-of-00002.safetensors").string());
        std::vector<std::uint8_t> input(4);
        const auto length = static_cast<std::uint32_t>(config.size());
        std::memcpy(input.data(), &length, 4);
        input.insert(input.end(), config.begin(), config.end());
        input.insert(input.end(), shard.begin(), shard.end());
        fuzz::check_quantized_model(input.data(), input.size());
        ++quantized;
    }
    BOOST_TEST(quantized == 11u);
}

BOOST_AUTO_TEST_CASE(checks_accept_valid_sources) {
    // Without this, a change that made every input "refused" would let the replays above pass on nothing.
    for (const char* valid : {"vectors/safetensors/all_dtypes.safetensors", "vectors/gguf/mixed.gguf",
                              "vectors/malformed/ok_base.gguf", "pytorch/malformed/ok_archive.pt",
                              "pytorch/malformed/ok_legacy.pt"}) {
        const auto bytes = test::read_bytes(test::data_path(valid));
        const std::string name = fs::path(valid).filename().string();
        BOOST_TEST(fuzz::open_checked(fuzz::Scratch::instance().write(name, bytes.data(), bytes.size())).has_value(),
                   valid);
    }
}

BOOST_AUTO_TEST_SUITE_END()
