// The CLI's text for people (sizes, counts, escapes, aligned tables, shortened metadata) and how it sorts the
// words of `-o` lists (ours, mount(8)'s, libfuse's, unknown).
#include <boost/test/unit_test.hpp>

#include "cli/metadata_text.hpp"
#include "fuse/mount_options.hpp"
#include "tensorfs/size_option.hpp"
#include "cli/text_output.hpp"

using namespace tensorfs;
using namespace tensorfs::cli;
using Json = nlohmann::ordered_json;

BOOST_AUTO_TEST_SUITE(cli_text)

BOOST_AUTO_TEST_CASE(sizes_and_counts) {
    BOOST_TEST(human_size(0) == "0 B");
    BOOST_TEST(human_size(1023) == "1023 B");
    BOOST_TEST(human_size(1024) == "1.0 KiB");
    BOOST_TEST(human_size(1536) == "1.5 KiB");
    BOOST_TEST(human_size(105 * 1024) == "105 KiB");
    BOOST_TEST(human_size(std::uint64_t{3} << 30) == "3.0 GiB");
    BOOST_TEST(human_size(UINT64_MAX) == "16.0 EiB");
    BOOST_TEST(short_count(999) == "999");
    BOOST_TEST(short_count(1574144) == "1.57 M");
    BOOST_TEST(short_count(94528) == "94.5 K");
    BOOST_TEST(short_count(8030261248) == "8.03 B");
    BOOST_TEST(shape_text({}) == "[]");
    BOOST_TEST(shape_text({4096, 0, 2}) == "[4096, 0, 2]");
}

BOOST_AUTO_TEST_CASE(control_bytes_are_made_visible) {
    BOOST_TEST(visible("a\nb\tc\rd") == "a\\nb\\tc\\rd");
    BOOST_TEST(visible(std::string("x\0y\x1b\x7f", 5)) == "x\\x00y\\x1B\\x7F");
    BOOST_TEST(visible("\"back\\slash\" é") == "\"back\\slash\" é");
    BOOST_TEST(quoted("say \"hi\"\\\n") == "\"say \\\"hi\\\"\\\\\\n\"");
}

BOOST_AUTO_TEST_CASE(characters_are_never_split) {
    BOOST_TEST(first_characters("héllo", 2) == "hé");
    BOOST_TEST(first_characters("🦙🦙🦙", 1) == "🦙");
    BOOST_TEST(first_characters("abc", 10) == "abc");
    BOOST_TEST(display_width("Grüße 🦙") == 7u);
}

BOOST_AUTO_TEST_CASE(table_columns_line_up) {
    Table table({Align::Left, Align::Right, Align::Left});
    table.add_row({"NAME", "SIZE", "NOTE"});
    table.add_row({"é", "1.0 KiB", ""});
    table.add_row({"longer", "12 B", "x"});
    BOOST_TEST(table.render() == "NAME       SIZE  NOTE\n"
                                 "é       1.0 KiB\n"
                                 "longer     12 B  x\n");
    BOOST_CHECK_THROW(table.add_row({"too", "few"}), std::logic_error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cli_metadata)

BOOST_AUTO_TEST_CASE(scalars) {
    BOOST_TEST(metadata_value_text(Json("llama"), "STRING") == "llama");
    BOOST_TEST(metadata_value_text(Json(""), "STRING") == "\"\"");
    BOOST_TEST(metadata_value_text(Json(static_cast<double>(1e-5f)), "FLOAT32") == "1e-05");
    BOOST_TEST(metadata_value_text(Json(0.1), "FLOAT64") == "0.1");
    BOOST_TEST(metadata_value_text(Json(18446744073709551615ull), "UINT64") == "18446744073709551615");
    BOOST_TEST(metadata_value_text(Json(true), "BOOL") == "true");
    BOOST_TEST(metadata_value_text(Json(189056), "") == "189056");
}

BOOST_AUTO_TEST_CASE(long_strings_are_cut) {
    const std::string template_text = "{% for m in messages %}\n" + std::string(200, 'x');
    const std::string shown = metadata_value_text(Json(template_text), "STRING");
    BOOST_TEST(shown == "{% for m in messages %}\\n" + std::string(56, 'x') + "... (224 bytes)");
}

BOOST_AUTO_TEST_CASE(short_arrays_whole_long_ones_shortened) {
    BOOST_TEST(metadata_value_text(Json::array(), "ARRAY[INT32]") == "[]");
    BOOST_TEST(metadata_value_text(Json({1, -2, 3}), "ARRAY[INT32]") == "[1, -2, 3]");
    BOOST_TEST(metadata_value_text(Json({0.5, static_cast<double>(0.001f)}), "ARRAY[FLOAT32]") == "[0.5, 0.001]");
    Json tokens = Json::array();
    for (int i = 0; i < 512; ++i) tokens.push_back(i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
    BOOST_TEST(metadata_value_text(tokens, "ARRAY[STRING]") ==
               R"([512 items: "<unk>", "<s>", "</s>", "</s>", "</s>", "</s>", "</s>", ...])");
    // Items are cut too; the first one is shown even when it alone fills the preview.
    const Json long_items = Json::array({std::string(300, 'a'), "b", "c"});
    const std::string cut_item = "\"" + std::string(40, 'a') + "\"...";
    BOOST_TEST(metadata_value_text(long_items, "ARRAY[STRING]") == "[" + cut_item + ", \"b\", \"c\"]");
    const Json many_long_items(10, std::string(300, 'a'));
    BOOST_TEST(metadata_value_text(many_long_items, "ARRAY[STRING]") == "[10 items: " + cut_item + ", ...]");
    BOOST_TEST(metadata_value_text(Json::array({Json::array({1, 2}), Json::array()}), "ARRAY[ARRAY[INT32]]") ==
               "[[1, 2], []]");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cli_mount_options)

BOOST_AUTO_TEST_CASE(ours_are_taken_out) {
    MountOptions options;
    BOOST_TEST(take_option_list("cache_size=2G,threads=8", options) == "");
    BOOST_TEST(options.settings.cache_size == std::uint64_t{2} << 30);
    BOOST_TEST(options.settings.threads == 8u);
    BOOST_TEST(options.fuse_options.empty());
    BOOST_TEST(take_option_list("cache_size=lots", options) == "bad cache_size 'lots' (e.g. 512M, 2G)");
    BOOST_TEST(take_option_list("threads=0", options) == "bad threads '0' (1 to 1024)");
}

BOOST_AUTO_TEST_CASE(size_units_in_any_case_with_or_without_ib) {
    const auto bytes = [](const char* text) { return parse_size(text).value_or(UINT64_MAX); };
    for (const char* text : {"512M", "512m", "512MiB", "512mib", "512MIB", "512MB", "512mb"}) {
        BOOST_TEST(bytes(text) == std::uint64_t{512} << 20, text);
    }
    BOOST_TEST(bytes("2g") == std::uint64_t{2} << 30);
    BOOST_TEST(bytes("64k") == 64u << 10);
    BOOST_TEST(bytes("512B") == 512u);
    BOOST_TEST(bytes("512") == 512u);
    for (const char* text : {"512iB", "512MiBs", "512x", "M", "", "-1G", "20000000000T"}) {
        BOOST_TEST(!parse_size(text).has_value(), text);
    }
}

BOOST_AUTO_TEST_CASE(what_mount8_passes_is_accepted) {
    MountOptions options;
    BOOST_TEST(take_option_list("rw,defaults,noauto,user,nofail,_netdev,x-systemd.automount,X-mount.mkdir,"
                                "comment=x,relatime,nodiratime,lazytime,ro,,",
                                options) == "");
    BOOST_TEST(options.fuse_options.empty());  // `rw` above all must never reach libfuse
    BOOST_TEST(take_option_list("noatime,nodev,suid,noexec,allow_other,fsname=m,max_read=131072", options) == "");
    const std::vector<std::string> libfuse = {"noatime", "nodev", "suid", "noexec", "allow_other", "fsname=m",
                                              "max_read=131072"};
    BOOST_TEST(options.fuse_options == libfuse, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(unknown_ones_are_refused) {
    MountOptions options;
    BOOST_TEST(take_option_list("ro,bogus,allow_other", options) == "unknown mount option 'bogus'");
    BOOST_TEST(take_option_list("max_read=much", options) == "unknown mount option 'max_read=much'");
    // libfuse's command-line options are not mount options: threads=N is ours.
    BOOST_TEST(take_option_list("max_threads=4", options) == "unknown mount option 'max_threads=4'");
    // A typo of a name: the nearest one, with the value given.
    BOOST_TEST(take_option_list("cach_size=1G", options) ==
               "unknown mount option 'cach_size=1G'; did you mean 'cache_size=1G'?");
    BOOST_TEST(take_option_list("nodeev", options) == "unknown mount option 'nodeev'; did you mean 'nodev'?");
    BOOST_TEST(take_option_list("threads", options) == "threads needs a value: threads=...");
}

BOOST_AUTO_TEST_SUITE_END()
