// The fast road through safetensors JSON (simdjson) must give what the full road (nlohmann) gives: the same
// catalog, the same verdict, the same messages. It takes only the usual shape and declines everything else.
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "format/safetensors_fast_json.hpp"
#include "test_safetensors_files.hpp"

using namespace tensorfs;
using safetensors::read_usual_header;
using safetensors::read_usual_index;

namespace {

struct Spec {
    std::string name;
    std::string dtype;
    std::string shape;  // JSON array text
    std::uint64_t begin;
    std::uint64_t end;
};

// A header of `specs`, each entry with `extra` after its usual fields, padded with spaces to `length` bytes.
std::string header_text(const std::vector<Spec>& specs, const std::string& metadata, const std::string& extra,
                        std::size_t length) {
    std::string text = "{";
    for (const auto& spec : specs) {
        text += "\"" + spec.name + "\":{\"dtype\":\"" + spec.dtype + "\",\"shape\":" + spec.shape +
                ",\"data_offsets\":[" + std::to_string(spec.begin) + "," + std::to_string(spec.end) + "]" + extra +
                "},";
    }
    text += metadata.empty() ? "" : "\"__metadata__\":" + metadata + ",";
    text.back() = '}';
    BOOST_REQUIRE(text.size() <= length);
    return text + std::string(length - text.size(), ' ');
}

std::string catalog_text(const Catalog& catalog) {
    std::string text;
    for (const auto& tensor : catalog.tensors) {
        text += tensor.name + " " + std::string(tensor.type->name) + " " + std::to_string(tensor.elements) + " " +
                std::to_string(tensor.offset) + " " + std::to_string(tensor.nbytes) + " [";
        for (const auto dim : tensor.shape) text += std::to_string(dim) + ",";
        text += "]\n";
    }
    return text + catalog.metadata.dump();
}

// What mounting the file gives: its catalog, or the lines of its refusal.
std::string outcome(test::TempFolder& folder, const std::string& header, const std::string& data) {
    const std::string path = folder.write("m.safetensors", test::safetensors_bytes(header, data));
    std::string result;
    const std::string refusal = test::refusal_of([&] { result = catalog_text(open_catalog(path)); });
    return refusal.empty() ? result : refusal;
}

// Opens the same header twice, once as written (the fast road takes it) and once with an ignored field in every
// entry (the fast road declines it, so the full road reads it), with the same header length so that every
// offset stays the same: both must give the same outcome.
void check_both_roads_agree(const std::vector<Spec>& specs, const std::string& metadata, std::size_t data_bytes) {
    const std::size_t length = header_text(specs, metadata, ",\"ignored\":0", 4096).find_last_not_of(' ') + 9;
    const std::string usual = header_text(specs, metadata, "", length);
    const std::string unusual = header_text(specs, metadata, ",\"ignored\":0", length);
    BOOST_TEST_REQUIRE(read_usual_header(usual).has_value());
    BOOST_TEST_REQUIRE(!read_usual_header(unusual).has_value());
    test::TempFolder folder;
    const std::string data(data_bytes, '\x01');
    BOOST_TEST(outcome(folder, usual, data) == outcome(folder, unusual, data));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(safetensors_fast_json)

BOOST_AUTO_TEST_CASE(both_roads_give_the_same_catalog) {
    check_both_roads_agree({{"b", "F32", "[2]", 0, 8}, {"a", "BF16", "[2,3]", 8, 20}, {"c", "I8", "[0]", 20, 20}},
                           R"({"format":"pt","note":"a \"quoted\"\nline"})", 20);
    check_both_roads_agree({{"scalar", "F64", "[]", 0, 8}}, "", 8);
}

BOOST_AUTO_TEST_CASE(both_roads_give_the_same_refusal) {
    // Unknown dtype, a size that does not match the shape, a gap, an overlap, an end before the begin, data past
    // the end of the file, a shape whose element count overflows, sub-byte elements that do not fill a byte.
    check_both_roads_agree({{"a", "F33", "[2]", 0, 8}}, "", 8);
    check_both_roads_agree({{"a", "F32", "[3]", 0, 8}}, "", 8);
    check_both_roads_agree({{"a", "F32", "[2]", 4, 12}}, "", 12);
    check_both_roads_agree({{"a", "F32", "[2]", 0, 8}, {"b", "F32", "[2]", 4, 12}}, "", 12);
    check_both_roads_agree({{"a", "F32", "[2]", 8, 0}}, "", 8);
    check_both_roads_agree({{"a", "F32", "[2]", 0, 8}}, "", 4);
    check_both_roads_agree({{"a", "F32", "[4294967296,4294967296]", 0, 8}}, "", 8);
    check_both_roads_agree({{"a", "F4", "[3]", 0, 2}}, "", 2);
    check_both_roads_agree({{"a", "F32", "[2]", 0, 8}}, "", 16);
}

BOOST_AUTO_TEST_CASE(the_usual_header_is_read_sorted_by_name) {
    const auto header = read_usual_header(
        R"({"b":{"shape":[1],"dtype":"F32","data_offsets":[0,4]},"__metadata__":{"k":"v"},"a":{"data_offsets":[4,8],"dtype":"I32","shape":[1]}})");
    BOOST_TEST_REQUIRE(header.has_value());
    BOOST_TEST_REQUIRE(header->entries.size() == 2u);
    BOOST_TEST(header->entries[0].name == "a");
    BOOST_TEST(header->entries[0].dtype == "I32");
    BOOST_TEST(header->entries[0].begin == 4u);
    BOOST_TEST(header->entries[1].name == "b");
    BOOST_TEST(header->entries[1].shape == std::vector<std::uint64_t>{1});
    BOOST_TEST(*header->metadata == nlohmann::json({{"k", "v"}}));
}

BOOST_AUTO_TEST_CASE(every_unusual_header_is_left_to_the_full_road) {
    const std::string entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
    const char* unusual[] = {
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
        R"({"a":{"dtype":"F32","dtype":"F32","data_offsets":[0,4]}})",
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})",
        R"({"a":{"dtype":"F32","shape":[1]}})",
        R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
        R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})",
        R"({"a":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}})",
        R"({"a":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})",
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})",
        R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})",
        R"({"a":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})",
        R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
        R"({"\u0061":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
        R"({"a":[]})",
        R"({"__metadata__":null})",
        R"({"__metadata__":{"k":1}})",
        R"({"__metadata__":{"k":"v","k":"w"}})",
        R"({"__metadata__":{},"__metadata__":{}})",
        R"([])",
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} x)",
        R"({"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})",
        "",
    };
    BOOST_TEST(read_usual_header(R"({"a":)" + entry + "}").has_value());
    for (const char* text : unusual) {
        BOOST_TEST_CONTEXT(text) { BOOST_TEST(!read_usual_header(text).has_value()); }
    }
}

BOOST_AUTO_TEST_CASE(the_usual_index_names_each_shard_once) {
    const auto index = read_usual_index(
        R"({"metadata":{"total_size":24,"list":[1,"x",true,null,{"k":{}}]},"weight_map":{"b":"s2","a":"s1","c":"s1"}})");
    BOOST_TEST_REQUIRE(index.has_value());
    BOOST_TEST(*index->metadata ==
               nlohmann::json::parse(R"({"total_size":24,"list":[1,"x",true,null,{"k":{}}]})"));
    BOOST_TEST_REQUIRE(index->weight_map.size() == 3u);
    BOOST_TEST(index->weight_map[0].first == "a");
    BOOST_TEST(index->weight_map[1].first == "b");
    BOOST_TEST(index->shards[index->weight_map[0].second] == "s1");
    BOOST_TEST(index->shards[index->weight_map[1].second] == "s2");
    BOOST_TEST(index->weight_map[2].second == index->weight_map[0].second);
    BOOST_TEST(index->shards.size() == 2u);
}

BOOST_AUTO_TEST_CASE(every_unusual_index_is_left_to_the_full_road) {
    std::string deep = R"({"weight_map":{"a":"s"},"metadata":{"d":)";
    for (int i = 0; i < 100; ++i) deep += "[";
    for (int i = 0; i < 100; ++i) deep += "]";
    deep += "}}";
    const std::string unusual[] = {
        R"({"weight_map":{}})",
        R"({"metadata":{}})",
        R"({"weight_map":{"a":1}})",
        R"({"weight_map":{"":"s"}})",
        R"({"weight_map":{"a":"s","a":"t"}})",
        R"({"weight_map":{"a":"s"},"weight_map":{"a":"s"}})",
        R"({"weight_map":{"a":"s"},"other":1})",
        R"({"weight_map":{"a":"s"},"metadata":[]})",
        R"({"weight_map":{"a":"s"},"metadata":{"n":-1}})",
        R"({"weight_map":{"a":"s"},"metadata":{"n":0.5}})",
        R"({"weight_map":{"a":"s"},"metadata":{"o":{"k":1,"k":2}}})",
        R"({"weight_map":{"a":"\u0073"}})",
        deep,
    };
    BOOST_TEST(read_usual_index(R"({"weight_map":{"a":"s"}})").has_value());
    for (const auto& text : unusual) {
        BOOST_TEST_CONTEXT(text) { BOOST_TEST(!read_usual_index(text).has_value()); }
    }
}

BOOST_AUTO_TEST_SUITE_END()
