// PyTorch checkpoints written on the fly: the zip directory's rules, the archive's records, tensors placed in their
// storages, dotted names and metadata, and several files as one model.
#include <boost/test/unit_test.hpp>

#include <cstring>

#include "format/crc32.hpp"
#include "refusal_words.hpp"
#include "tensorfs/open_source.hpp"
#include "test_safetensors_files.hpp"
#include "test_zip_builder.hpp"

using namespace tensorfs;
using namespace tensorfs::test;

namespace {

std::string floats(std::vector<float> values) {
    std::string bytes(values.size() * 4, '\0');
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

// {"w": float32 (2, 3) on storage 0 of 6 elements}
const std::string kWeightPickle =
    pickle_of(pickle_dict({{pickle_text("w"), pickle_tensor("0", 6, {2, 3}, {3, 1})}}));
const std::string kWeightBytes = floats({1, 2, 3, 4, 5, 6});

struct Folder {
    TempFolder folder;
    std::string write(const std::string& name, const std::string& bytes) const { return folder.write(name, bytes); }
    Catalog open(const std::string& name, const std::string& bytes) const { return open_catalog(write(name, bytes)); }
    std::string refusal(const std::string& name, const std::string& bytes) const {
        const std::string path = write(name, bytes);
        return refusal_of([&] { open_catalog(path); });
    }
};

// The archive with the 4 bytes at `at` set to `value` (little-endian).
std::string patched(std::string bytes, std::size_t at, std::uint32_t value) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>(value >> (8 * i));
    return bytes;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(pytorch_files)

BOOST_AUTO_TEST_CASE(crc32_of_the_check_string) { BOOST_TEST(crc32("123456789") == 0xCBF43926u); }

BOOST_AUTO_TEST_CASE(a_checkpoint_is_its_tensors_in_their_storages) {
    Folder f;
    const std::string bytes = checkpoint_bytes(kWeightPickle, {{"0", kWeightBytes}});
    const Catalog catalog = f.open("m.pt", bytes);
    BOOST_TEST(catalog.format == "pytorch");
    BOOST_REQUIRE_EQUAL(catalog.tensors.size(), 1u);
    const Tensor& w = catalog.tensors[0];
    BOOST_TEST(w.name == "w");
    BOOST_TEST(w.type->name == "float32");
    BOOST_TEST(w.nbytes == 24u);
    BOOST_TEST(!w.strided());
    BOOST_TEST(bytes.substr(w.offset, 24) == kWeightBytes);
}

BOOST_AUTO_TEST_CASE(zip64_records_and_a_comment_holding_a_fake_end_record) {
    Folder f;
    const std::vector<ZipEntrySpec> entries{{"archive/data.pkl", kWeightPickle},
                                            {"archive/data/0", kWeightBytes},
                                            {"archive/version", "3\n"}};
    BOOST_TEST(f.open("a.pt", zip_bytes(entries, true)).tensors.size() == 1u);
    // A comment that holds the end record's signature: the record is the one whose comment ends the file.
    const std::string comment = std::string("PK\x05\x06", 4) + std::string(30, 'c');
    BOOST_TEST(f.open("b.pt", zip_bytes(entries, false, comment)).tensors.size() == 1u);
}

BOOST_AUTO_TEST_CASE(directory_rules) {
    Folder f;
    const std::vector<ZipEntrySpec> good{{"archive/data.pkl", kWeightPickle},
                                         {"archive/data/0", kWeightBytes},
                                         {"archive/version", "3\n"}};
    const std::string bytes = zip_bytes(good);
    const std::size_t end = bytes.size() - 22;
    const std::size_t directory = bytes.find(std::string("PK\x01\x02", 4));
    check_says(f.refusal("short.pt", bytes.substr(0, 20)), "too short for a zip archive");
    check_says(f.refusal("cut.pt", bytes.substr(0, bytes.size() - 5)), "no end of central directory record");
    check_says(f.refusal("count.pt", patched(bytes, end + 8, 0x7FFF7FFF)), "more than");
    check_says(f.refusal("dir.pt", patched(bytes, end + 16, static_cast<std::uint32_t>(bytes.size()))),
               "does not lie before its end record");
    check_says(f.refusal("disk.pt", patched(bytes, end + 4, 1)), "archive spans several disks");
    check_says(f.refusal("local.pt", patched(bytes, directory + 42, 3)), "where there is no local file header");
    check_says(f.refusal("zip64.pt", patched(bytes, end + 16, 0xFFFFFFFF)), "there is no ZIP64 locator");
    check_says(f.refusal("nozip64.pt", patched(bytes, directory + 20, 0xFFFFFFFF)),
               "needs ZIP64 values that its extra field does not hold");

    std::vector<ZipEntrySpec> twice = good;
    twice.push_back({"archive/version", "3\n"});
    check_says(f.refusal("twice.pt", zip_bytes(twice)), "entry 'archive/version' appears twice");
    std::vector<ZipEntrySpec> encrypted = good;
    encrypted[1].flags = 1;
    check_says(f.refusal("encrypted.pt", zip_bytes(encrypted)), "entry 'archive/data/0' is encrypted");
    std::vector<ZipEntrySpec> compressed = good;
    compressed[1].method = 8;
    check_says(f.refusal("compressed.pt", zip_bytes(compressed)),
               "storage entry 'archive/data/0' is compressed (deflate)");
    compressed = good;
    compressed[0].method = 93;
    check_says(f.refusal("pickle.pt", zip_bytes(compressed)), "the pickle 'archive/data.pkl' is compressed (zstd)");
    // A pickle whose bytes no longer match their CRC.
    std::string damaged = bytes;
    damaged[bytes.find("archive/data.pkl") + 16 + 5] ^= 1;
    check_says(f.refusal("crc.pt", damaged), "does not match its CRC-32");
}

BOOST_AUTO_TEST_CASE(archive_records) {
    Folder f;
    const auto archive = [&](const std::vector<ZipEntrySpec>& entries) { return zip_bytes(entries); };
    check_says(f.refusal("flat.pt", archive({{"data.pkl", kWeightPickle}})), "is not in a folder");
    check_says(f.refusal("nopkl.pt", archive({{"archive/version", "3"}})), "archive has no 'archive/data.pkl'");
    check_says(f.refusal("nover.pt", checkpoint_bytes(kWeightPickle, {{"0", kWeightBytes}}, "")),
               "has no version record");
    check_says(f.refusal("ver.pt", checkpoint_bytes(kWeightPickle, {{"0", kWeightBytes}}, "11\n")),
               "version record '11' is not a format version that torch reads (1 to 10)");
    BOOST_TEST(f.open("dataver.pt", archive({{"archive/data.pkl", kWeightPickle},
                                             {"archive/data/0", kWeightBytes},
                                             {"archive/.data/version", "1"}}))
                   .tensors.size() == 1u);
    const auto with_order = [&](const std::string& order) {
        return archive({{"archive/data.pkl", kWeightPickle}, {"archive/byteorder", order},
                        {"archive/data/0", kWeightBytes}, {"archive/version", "3\n"}});
    };
    BOOST_TEST(f.open("little.pt", with_order("little")).tensors.size() == 1u);
    check_says(f.refusal("big.pt", with_order("big")), "storages are big-endian");
    check_says(f.refusal("odd.pt", with_order("middle")), "byteorder record 'middle' is neither");
    check_says(f.refusal("missing.pt", checkpoint_bytes(kWeightPickle, {})),
               "archive/data.pkl: storage '0' is not in the archive (no entry 'archive/data/0')");
    check_says(f.refusal("short.pt", checkpoint_bytes(kWeightPickle, {{"0", kWeightBytes.substr(4)}})),
               "storage '0' has 6 elements of float32, but its entry holds 20 bytes");
}

BOOST_AUTO_TEST_CASE(tensors_are_checked_against_their_storage) {
    Folder f;
    const auto refusal = [&](const std::string& tensor) {
        return f.refusal("t.pt", checkpoint_bytes(pickle_of(pickle_dict({{pickle_text("t"), tensor}})),
                                                  {{"0", kWeightBytes}}));
    };
    check_says(refusal(pickle_tensor("0", 6, {7}, {1})),
               "tensor \"t\": size (7,), stride (1,) and storage offset 0 reach element 6 of storage 0, which holds "
               "6 elements of float32");
    check_says(refusal(pickle_tensor("0", 6, {3, 2}, {1, 3}, 1)), "reach element 6 of storage 0");
    // A view: raw is the bytes its elements span, from its first element.
    const Catalog catalog = f.open("view.pt", checkpoint_bytes(
        pickle_of(pickle_dict({{pickle_text("t"), pickle_tensor("0", 6, {2, 2}, {1, 3}, 1)},
                               {pickle_text("e"), pickle_tensor("0", 6, {0, 4}, {4, 1}, 9)},
                               {pickle_text("s"), pickle_tensor("0", 6, {}, {}, 5)}})),
        {{"0", kWeightBytes}}));
    BOOST_REQUIRE_EQUAL(catalog.tensors.size(), 3u);
    const Tensor& t = catalog.tensors[0];
    BOOST_TEST(t.strided());
    BOOST_TEST(t.stride == (std::vector<std::uint64_t>{1, 3}), boost::test_tools::per_element());
    BOOST_TEST(t.storage_offset == 1u);
    BOOST_TEST(t.nbytes == 5u * 4);  // elements 1, 2, 4, 5: from 1 to 5
    const Tensor& e = catalog.tensors[1];
    BOOST_TEST((e.elements == 0 && e.nbytes == 0 && !e.strided()));
    BOOST_TEST(e.offset == catalog.tensors[0].offset - 4 + 24);  // an empty tensor past its storage: at its end
    const Tensor& s = catalog.tensors[2];
    BOOST_TEST((s.elements == 1 && s.nbytes == 4 && s.shape.empty()));
}

BOOST_AUTO_TEST_CASE(nested_objects_give_dotted_names_and_metadata) {
    Folder f;
    const std::string tensor = pickle_tensor("0", 6, {6}, {1});
    const std::string body = pickle_dict({
        {pickle_text("model"), pickle_dict({{pickle_text("layer"), pickle_dict({{pickle_text("weight"), tensor}})}})},
        {pickle_text("state"), pickle_dict({{pickle_small_int(0), pickle_dict({{pickle_text("exp_avg"), tensor}})}})},
        {pickle_text("list"), "](" + tensor + tensor + "e"},
        {pickle_text("epoch"), pickle_small_int(3)},
        {pickle_text("name"), pickle_text("run")},
        {pickle_text("flags"), "](\x88\x89Ne"},
        {pickle_text("dtype"), pickle_global("torch", "bfloat16")},
    });
    const Catalog catalog = f.open("nested.pt", checkpoint_bytes(pickle_of(body), {{"0", kWeightBytes}}));
    std::vector<std::string> names;
    for (const Tensor& t : catalog.tensors) names.push_back(t.name);
    BOOST_TEST(names == (std::vector<std::string>{"model.layer.weight", "state.0.exp_avg", "list.0", "list.1"}),
               boost::test_tools::per_element());
    // The same storage under every name: tied weights share bytes.
    for (const Tensor& t : catalog.tensors) BOOST_TEST(t.offset == catalog.tensors[0].offset);
    BOOST_TEST(catalog.metadata.dump() ==
               R"({"epoch":3,"name":"run","flags":[true,false,null],"dtype":"torch.bfloat16"})");
}

BOOST_AUTO_TEST_CASE(names_that_cannot_be_told_apart_are_refused) {
    Folder f;
    const std::string tensor = pickle_tensor("0", 6, {6}, {1});
    const std::string body = pickle_dict({{pickle_text("a.b"), tensor},
                                          {pickle_text("a"), pickle_dict({{pickle_text("b"), tensor}})}});
    check_says(f.refusal("same.pt", checkpoint_bytes(pickle_of(body), {{"0", kWeightBytes}})),
               "archive/data.pkl: two tensors are named \"a.b\"");
    const std::string tuple_key = pickle_dict({{pickle_tuple({pickle_small_int(1)}), tensor}});
    check_says(f.refusal("key.pt", checkpoint_bytes(pickle_of(tuple_key), {{"0", kWeightBytes}})),
               "a dict has a key that is not a str or a number");
}

BOOST_AUTO_TEST_CASE(a_saved_tensor_is_named_after_its_file) {
    Folder f;
    const Catalog catalog =
        f.open("embeddings.pt", checkpoint_bytes(pickle_of(pickle_tensor("0", 6, {6}, {1})), {{"0", kWeightBytes}}));
    BOOST_REQUIRE_EQUAL(catalog.tensors.size(), 1u);
    BOOST_TEST(catalog.tensors[0].name == "embeddings");
}

BOOST_AUTO_TEST_CASE(files_of_a_folder_are_one_model_and_the_pytorch_index_comes_after_safetensors) {
    Folder f;
    const auto shard = [&](const std::string& name) {
        return checkpoint_bytes(pickle_of(pickle_dict({{pickle_text(name), pickle_tensor("0", 6, {6}, {1})}})),
                                {{"0", kWeightBytes}});
    };
    f.write("a.bin", shard("x"));
    f.write("b.pt", shard("y"));
    f.write("c.pth", shard("z"));
    f.write("notes.txt", "not a checkpoint");
    const Catalog folder = open_catalog(f.folder.path().string());
    BOOST_TEST(folder.files.size() == 3u);
    BOOST_TEST(folder.tensors.size() == 3u);

    f.write("model.bin.index.json", R"({"metadata":{"total_size":48},"weight_map":{"x":"a.bin","y":"b.pt"}})");
    const Catalog indexed = open_catalog(f.folder.path().string());
    BOOST_TEST(indexed.files.size() == 2u);
    BOOST_TEST(indexed.metadata.dump() == R"({"total_size":48})");
    check_says(refusal_of([&] { open_catalog(f.write("bad.bin.index.json", R"({"weight_map":{"x":"b.pt"}})")); }),
               "weight_map puts tensor \"x\" in b.pt, which lacks it");
    check_says(refusal_of([&] { open_catalog(f.folder.path().string()); }),
               "holds 2 models (bad.bin.index.json, model.bin.index.json); pick one");

    std::filesystem::remove(f.folder.path() / "model.bin.index.json");
    std::filesystem::remove(f.folder.path() / "bad.bin.index.json");
    f.write("y.bin", shard("x"));
    check_says(refusal_of([&] { open_catalog(f.folder.path().string()); }), "tensor \"x\" is in both a.bin and y.bin");

    // safetensors files win over PyTorch ones in the same folder.
    f.write("m.safetensors", safetensors_bytes(R"({"s":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                               std::string(4, '\0')));
    BOOST_TEST(open_catalog(f.folder.path().string()).format == "safetensors");
}

BOOST_AUTO_TEST_CASE(legacy_files_are_read_from_a_growing_window) {
    // The legacy layout: magic, protocol, system info, the object (a 100 KiB string among its values, so that the
    // pickle runs past the first 64 KiB window), the storage list, then count and bytes of each storage.
    const std::string magic = pickle_of(std::string("\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 12));
    const std::string protocol = pickle_of("M\xe9\x03");
    const std::string info = pickle_of(pickle_dict({{pickle_text("little_endian"), "\x88"}}));
    const std::string storage = pickle_tuple({pickle_text("storage"), pickle_global("torch", "FloatStorage"),
                                              pickle_text("k"), pickle_text("cpu"), pickle_small_int(6), "N"}) + "Q";
    const std::string tensor = pickle_global("torch._utils", "_rebuild_tensor_v2") +
                               pickle_tuple({storage, pickle_small_int(0), pickle_tuple({pickle_small_int(6)}),
                                             pickle_tuple({pickle_small_int(1)}), "\x89", "}"}) + "R";
    const std::string object = pickle_of(pickle_dict({{pickle_text("note"), pickle_text(std::string(100 << 10, 'n'))},
                                                      {pickle_text("w"), tensor}}));
    const std::string keys = pickle_of("](" + pickle_text("k") + "e");
    std::string count;
    put64(count, 6);
    Folder f;
    const std::string bytes = magic + protocol + info + object + keys + count + kWeightBytes;
    const Catalog catalog = f.open("legacy.pt", bytes);
    BOOST_REQUIRE_EQUAL(catalog.tensors.size(), 1u);
    BOOST_TEST(bytes.substr(catalog.tensors[0].offset, 24) == kWeightBytes);
    BOOST_TEST(catalog.metadata["note"].get<std::string>().size() == 100u << 10);

    check_says(f.refusal("cut.pt", bytes.substr(0, 70 << 10)), "the pickle: a BINUNICODE claims 102400 bytes, but only");
    check_says(f.refusal("nokeys.pt", magic + protocol + info + object + pickle_of("]") + count + kWeightBytes),
               "pickle refers to storage 'k', which the storage list does not name");
    check_says(f.refusal("proto.pt", magic + pickle_of("M\xea\x03") + info + object + keys + count + kWeightBytes),
               "legacy protocol version is not 1001");
    check_says(f.refusal("tar.pt", std::string(512, '\0')), "not a PyTorch checkpoint");
}

BOOST_AUTO_TEST_SUITE_END()
