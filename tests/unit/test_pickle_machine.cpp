// The restricted pickle machine on hand-written pickles: the data each opcode builds, the allow-list, and every
// refusal with its opcode or name and its byte, limits included.
#include <boost/test/unit_test.hpp>

#include <string>

#include "format/pickle_machine.hpp"
#include "refusal_words.hpp"

using namespace tensorfs;
using test::check_says;
using namespace tensorfs::pickle;
using namespace std::string_literals;  // "..."s keeps the NUL bytes of a pickle

namespace {

// A pickle: PROTO 2, `body`, STOP.
std::string pickled(const std::string& body) { return std::string("\x80\x02", 2) + body + "."; }

Unpickled run(const std::string& bytes, StorageIds ids = StorageIds::Archive, const Limits& limits = {}) {
    return unpickle({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}, ids, limits);
}

// The refusal of a pickle, as "what @ byte".
std::string refusal(const std::string& bytes, StorageIds ids = StorageIds::Archive, const Limits& limits = {}) {
    try {
        run(bytes, ids, limits);
    } catch (const PickleError& error) {
        return std::string(error.what()) + " @ " + std::to_string(error.at());
    }
    return "accepted";
}

// The refusal says `words` about the opcode at byte `at`.
void check_says_at(const std::string& refusal, const std::string& words, std::size_t at) {
    check_says(refusal, words);
    BOOST_TEST_CONTEXT(refusal) { BOOST_TEST(refusal.ends_with(" @ " + std::to_string(at))); }
}

std::string u32(std::uint32_t n) { return std::string{char(n), char(n >> 8), char(n >> 16), char(n >> 24)}; }

std::string unicode(const std::string& text) { return "X" + u32(static_cast<std::uint32_t>(text.size())) + text; }

// GLOBAL module.name
std::string global(const std::string& module, const std::string& name) { return "c" + module + "\n" + name + "\n"; }

// A FloatStorage reference ('storage', torch.FloatStorage, KEY, 'cpu', NUMEL) and BINPERSID.
std::string storage(const std::string& key, int numel, const std::string& cls = "FloatStorage") {
    return "(" + unicode("storage") + global("torch", cls) + unicode(key) + unicode("cpu") + "K" + char(numel) + "tQ";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(pickle_machine)

BOOST_AUTO_TEST_CASE(plain_data_opcodes) {
    // [None, True, False, 1, 300, -2, 1.5, 'x', b'ab', (), (1,), {'k': 2}, {3}, 2**70]
    const std::string body = std::string("](") + "N\x88\x89" + "K\x01" + "M\x2c\x01" + "J" + u32(0xFFFFFFFE) +
                             std::string("G\x3f\xf8\0\0\0\0\0\0", 9) + unicode("x") + "C\x02" "ab" + ")" +
                             "K\x01\x85" + "}" + unicode("k") + "K\x02s" + "\x8f(K\x03\x90" +
                             "\x8a\x09\0\0\0\0\0\0\0\0\x40"s + "e";
    const Unpickled result = run(pickled(body));
    const Objects& o = result.objects;
    const Value& list = o[result.root];
    BOOST_REQUIRE(list.kind == Kind::List);
    const auto items = o.items(list);
    BOOST_REQUIRE_EQUAL(items.size(), 14u);
    BOOST_TEST((o[items[0]].kind == Kind::None));
    BOOST_TEST((o[items[1]].kind == Kind::Bool && o[items[1]].integer == 1));
    BOOST_TEST((o[items[2]].kind == Kind::Bool && o[items[2]].integer == 0));
    BOOST_TEST(o[items[3]].integer == 1);
    BOOST_TEST(o[items[4]].integer == 300);
    BOOST_TEST(o[items[5]].integer == -2);
    BOOST_TEST(o[items[6]].real == 1.5);
    BOOST_TEST(o.text(o[items[7]]) == "x");
    BOOST_TEST((o[items[8]].kind == Kind::Bytes && o.text(o[items[8]]) == "ab"));
    BOOST_TEST((o[items[9]].kind == Kind::Tuple && o.items(o[items[9]]).empty()));
    BOOST_TEST(o.items(o[items[10]]).size() == 1u);
    BOOST_TEST(o.items(o[items[11]]).size() == 2u);  // key, value
    BOOST_TEST((o[items[12]].kind == Kind::Set && o.items(o[items[12]]).size() == 1u));
    BOOST_TEST((o[items[13]].kind == Kind::BigInt && o.text(o[items[13]]).size() == 9u));
    BOOST_TEST(result.end == pickled(body).size());
}

BOOST_AUTO_TEST_CASE(long_integers_are_twos_complement) {
    // LONG1 of 2 bytes 0xFF 0x7F = 32767; of 1 byte 0xFF = -1; of 8 bytes = INT64_MIN; of 0 bytes = 0.
    const std::string body = "(\x8a\x02\xff\x7f\x8a\x01\xff\x8a\x08\0\0\0\0\0\0\0\x80\x8a\x00t"s;
    const Unpickled result = run(pickled(body));
    const auto items = result.objects.items(result.objects[result.root]);
    BOOST_TEST(result.objects[items[0]].integer == 32767);
    BOOST_TEST(result.objects[items[1]].integer == -1);
    BOOST_TEST(result.objects[items[2]].integer == INT64_MIN);
    BOOST_TEST(result.objects[items[3]].integer == 0);
}

BOOST_AUTO_TEST_CASE(memo_shares_objects_as_python_does) {
    // d = {}; memo[0] = d; [d, d] then d['a'] = 1: both list items are the one dict, filled after being put.
    const std::string body = "}q\x00]q\x01(h\x00h\x00" "eh\x00"s + unicode("a") + "K\x01s0h\x01";
    const Unpickled result = run(pickled(body));
    const auto items = result.objects.items(result.objects[result.root]);
    BOOST_REQUIRE_EQUAL(items.size(), 2u);
    BOOST_TEST(items[0] == items[1]);
    BOOST_TEST(result.objects.items(result.objects[items[0]]).size() == 2u);
}

BOOST_AUTO_TEST_CASE(protocol_4_frames_memoize_and_stack_global) {
    const std::string body = "\x95\x10\0\0\0\0\0\0\0"s + "\x8c\x0b" "collections\x94" +
                             "\x8c\x0b" "OrderedDict\x94\x93)R" + "\x8c\x01k\x8c\x01vs";
    const std::string bytes = std::string("\x80\x04", 2) + body + ".";
    const Unpickled result = run(bytes);
    BOOST_TEST((result.objects[result.root].kind == Kind::Dict));
    BOOST_TEST(result.objects.items(result.objects[result.root]).size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_state_dict_tensor_is_built_from_its_rebuild_arguments) {
    // OrderedDict w: _rebuild_tensor_v2(storage('0', 6), 1, (2, 2), (1, 2), False, OrderedDict())
    const std::string tensor = global("torch._utils", "_rebuild_tensor_v2") + "(" + storage("0", 6) + "K\x01" +
                               "K\x02K\x02\x86" + "K\x01K\x02\x86" + "\x89" +
                               global("collections", "OrderedDict") + ")R" + "tR";
    const Unpickled result = run(pickled(global("collections", "OrderedDict") + ")R" + unicode("w") + tensor + "s"));
    const Objects& o = result.objects;
    const auto items = o.items(o[result.root]);
    BOOST_REQUIRE_EQUAL(items.size(), 2u);
    BOOST_REQUIRE((o[items[1]].kind == Kind::Tensor));
    const TensorRecord& record = o.tensor(o[items[1]]);
    BOOST_TEST(record.type->name == "float32");
    BOOST_TEST(record.storage_offset == 1u);
    BOOST_TEST(record.shape == (std::vector<std::uint64_t>{2, 2}), boost::test_tools::per_element());
    BOOST_TEST(record.stride == (std::vector<std::uint64_t>{1, 2}), boost::test_tools::per_element());
    BOOST_REQUIRE_EQUAL(o.storages().size(), 1u);
    BOOST_TEST(o.storages()[0].key == "0");
    BOOST_TEST(o.storages()[0].numel == 6u);
}

BOOST_AUTO_TEST_CASE(rebuild_v3_takes_its_dtype_and_parameters_their_tensor) {
    const std::string tensor = global("torch._utils", "_rebuild_tensor_v3") + "(" +
                               storage("0", 4, "UntypedStorage") + "K\x00"s + "K\x04\x85" + "K\x01\x85" + "\x89" + "}" +
                               global("torch", "float8_e4m3fn") + "tR";
    const std::string parameter = global("torch._utils", "_rebuild_parameter") + "(" + tensor + "\x88}tR";
    const Unpickled result = run(pickled(parameter));
    BOOST_REQUIRE((result.objects[result.root].kind == Kind::Tensor));
    BOOST_TEST(result.objects.tensor(result.objects[result.root]).type->name == "float8_e4m3fn");
    BOOST_TEST(result.objects.storages()[0].type->name == "uint8");
}

BOOST_AUTO_TEST_CASE(allowed_builders_give_plain_data) {
    // (torch.Size((2, 3)), torch.device('cuda', 1), set([1]), slice(5), _codecs.encode('\u00e9', 'latin1'))
    const std::string body = "(" + global("torch", "Size") + "K\x02K\x03\x86\x85R" + global("torch", "device") +
                             unicode("cuda") + "K\x01\x86R" + global("__builtin__", "set") + "]K\x01" "a\x85R" +
                             global("builtins", "slice") + "K\x05\x85R" + global("_codecs", "encode") +
                             unicode("\xc3\xa9") + unicode("latin1") + "\x86R" + "t";
    const Unpickled result = run(pickled(body));
    const Objects& o = result.objects;
    const auto items = o.items(o[result.root]);
    BOOST_TEST(o.items(o[items[0]]).size() == 2u);
    BOOST_TEST(o.text(o[items[1]]) == "cuda:1");
    BOOST_TEST((o[items[2]].kind == Kind::Set));
    BOOST_TEST(o.items(o[items[3]]).size() == 3u);
    BOOST_TEST(o.text(o[items[4]]) == "\xe9");
}

BOOST_AUTO_TEST_CASE(globals_off_the_allow_list_are_refused_by_name_at_their_byte) {
    check_says_at(refusal(pickled(global("os", "system") + "(" + unicode("true") + "tR")),
                  "global os.system is refused: only the names that build tensors and plain data are allowed, and "
                  "nothing is ever called",
                  2);
    check_says_at(refusal(pickled(unicode("builtins") + unicode("eval") + "\x93")), "global builtins.eval is refused", 24);
    check_says(refusal(pickled(global("posix", "system"))), "global posix.system is refused");
    check_says(refusal(pickled(global("torch", "load"))), "global torch.load is refused");
    check_says(refusal(pickled(global("torch._utils", "_rebuild_qtensor"))), "global torch._utils._rebuild_qtensor");
    check_says(refusal(pickled(global("torch.nn.modules.linear", "Linear"))), "global torch.nn.modules.linear.Linear");
    check_says(refusal(pickled(global("collections", "Counter"))), "global collections.Counter is refused");
    check_says(refusal(pickled(global("torch", "QInt8Storage"))), "global torch.QInt8Storage is refused");
    check_says(refusal(pickled(global("os\nsystem", "x"))), "is refused");
}

BOOST_AUTO_TEST_CASE(opcodes_that_run_or_import_code_are_refused_by_name_at_their_byte) {
    check_says_at(refusal(pickled("(ios\nsystem\n")), "opcode INST (0x69) is refused: it creates an instance", 3);
    check_says_at(refusal(pickled("N)\x81")), "opcode NEWOBJ (0x81) is refused", 4);
    check_says(refusal(pickled("N)}\x92")), "opcode NEWOBJ_EX (0x92) is refused");
    check_says(refusal(pickled("(o")), "opcode OBJ (0x6F) is refused");
    check_says(refusal(pickled("\x82\x01")), "opcode EXT1 (0x82) is refused: it looks up the copyreg");
    check_says(refusal(pickled("Pid\n")), "opcode PERSID (0x50) is refused");
    check_says(refusal(pickled("I1\n")), "opcode INT (0x49) is refused: it belongs to pickle protocols 0 and 1");
    check_says(refusal(pickled("\x97")), "opcode NEXT_BUFFER (0x97) is refused: out-of-band");
    check_says_at(refusal(pickled("\xff")), "byte 0xFF is not a pickle opcode", 2);
    check_says(refusal("(lp0\n."), "does not start with PROTO");
    check_says(refusal("\x80\x01."s), "pickle protocol 1 is not read");
    check_says(refusal("\x80\x06."s), "pickle protocol 6 is not read");
}

BOOST_AUTO_TEST_CASE(reduce_and_build_only_build_data) {
    check_says(refusal(pickled("K\x01)R")), "REDUCE calls an int, which is not an allowed name");
    check_says(refusal(pickled(global("torch", "FloatStorage") + ")R")), "only names a type and builds nothing");
    check_says(refusal(pickled(global("collections", "OrderedDict") + "K\x01\x85R")), "takes 0 arguments, not 1");
    check_says(refusal(pickled("]}b")), "BUILD (set the state of) a list is not allowed");
    check_says(refusal(pickled(global("_codecs", "encode") + unicode("x") + unicode("rot13") + "\x86R")),
               "_codecs.encode to rot13 is refused");
    // BUILD on an OrderedDict (a state_dict's _metadata) keeps its items and drops the state.
    BOOST_TEST(refusal(pickled(global("collections", "OrderedDict") + ")R}b")) == "accepted");
}

BOOST_AUTO_TEST_CASE(storage_ids_are_checked) {
    check_says(refusal(pickled("(" + unicode("module") + "tQ")), "BINPERSID names something other than a storage");
    check_says(refusal(pickled("(" + unicode("storage") + global("torch", "float32") + unicode("0") + unicode("cpu") +
                               "K\x01tQ")),
               "gives the dtype float32 as its storage class");
    check_says(refusal(pickled(storage("0", 4) + storage("0", 5))), "storage 0 is named as 4 elements of float32 and as 5");
    check_says(refusal(pickled(storage("0", 4)), StorageIds::Legacy), "has 5 fields, not 6");
    // A legacy view of part of a storage.
    const std::string view = "(" + unicode("storage") + global("torch", "FloatStorage") + unicode("k") +
                             unicode("cpu") + "K\x0a(" + unicode("v") + "K\x04K\x06ttQ";
    const Unpickled result = run(pickled(view), StorageIds::Legacy);
    const StorageSlice& slice = result.objects.slices()[result.objects[result.root].index];
    BOOST_TEST(slice.first == 4u);
    BOOST_TEST(slice.count == 6u);
    const std::string past = "(" + unicode("storage") + global("torch", "FloatStorage") + unicode("k") +
                             unicode("cpu") + "K\x0a(" + unicode("v") + "K\x08K\x06ttQ";
    check_says(refusal(pickled(past), StorageIds::Legacy), "a view of storage k takes elements [8, +6) of its 10");
}

BOOST_AUTO_TEST_CASE(tensor_arguments_are_checked) {
    const std::string rebuild = global("torch._utils", "_rebuild_tensor_v2");
    const std::string tail = "\x89}tR";
    check_says(refusal(pickled(rebuild + "(K\x01K\x00K\x01\x85K\x01\x85"s + tail)), "a tensor is built on an int");
    check_says(refusal(pickled(rebuild + "(" + storage("0", 4) + "J" + u32(0xFFFFFFFF) + "K\x01\x85K\x01\x85" + tail)),
               "a tensor's storage offset is -1, not a non-negative integer");
    check_says(refusal(pickled(rebuild + "(" + storage("0", 4) + "K\x00K\x01K\x02\x86K\x01\x85"s + tail)),
               "a tensor has 2 sizes but 1 strides");
    check_says(refusal(pickled(rebuild + "(" + storage("0", 4) + "K\x00K\x01\x85K\x01\x85tR"s)),
               "_rebuild_tensor_v2 takes 6 or 7 arguments, not 4");
    check_says(refusal(pickled(rebuild + "(" + storage("0", 4) + "K\x00K\x01\x85K\x01\x85\x89}}"s + unicode("neg") +
                               "\x88stR")),
               "negative bit");
    std::string dims = "(";
    for (int i = 0; i < 65; ++i) dims += "K\x01";
    check_says(refusal(pickled(rebuild + "(" + storage("0", 4) + "K\x00"s + dims + "t" + dims + "t" + tail)),
               "has 65 dimensions, more than 64");
}

BOOST_AUTO_TEST_CASE(lengths_are_checked_before_anything_is_allocated) {
    // BINUNICODE8 and BINBYTES8 claiming 2^62 bytes; a LONG4 claiming 2^31 - 1.
    const auto at_end = [](const std::string& error) {
        check_says(error, "are left in the pickle");
    };
    at_end(refusal(pickled("\x8d\0\0\0\0\0\0\0\x40"s)));
    at_end(refusal(pickled("\x8e\0\0\0\0\0\0\0\x40"s)));
    at_end(refusal(pickled("\x8b" + u32(0x7FFFFFFF))));
    at_end(refusal(pickled("X" + u32(0xFFFFFFFF))));
    check_says(refusal(pickled(unicode("\xff"))), "a string is not valid UTF-8");
}

BOOST_AUTO_TEST_CASE(a_truncated_pickle_says_so) {
    std::string whole = pickled("]" + unicode("abcdef") + "a");
    for (std::size_t cut = 0; cut < whole.size(); ++cut) {
        BOOST_TEST_CONTEXT("cut at " << cut) {
            try {
                run(whole.substr(0, cut));
                BOOST_ERROR("accepted");
            } catch (const PickleError& error) {
                BOOST_TEST(error.truncated());
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(limits_bound_stack_marks_memo_and_objects) {
    Limits small;
    small.stack = 10;
    small.marks = 3;
    small.memo = 16;
    small.objects = 20;
    small.items = 8;
    check_says(refusal(pickled(std::string(11, 'N')), StorageIds::Archive, small), "the stack grows past 10 values");
    check_says_at(refusal(pickled("((((N"), StorageIds::Archive, small), "more than 3 MARKs are open", 5);
    check_says(refusal(pickled("Nq\x10"), StorageIds::Archive, small), "memo index 16 is over the limit of 16");
    check_says(refusal(pickled("Nr" + u32(0xFFFFFFFF))), "memo index 4294967295 is over the limit");
    check_says(refusal(pickled("h\x05")), "memo index 5 was never stored");
    check_says(refusal(pickled(std::string(8, 'N') + "0000000000000000"), StorageIds::Archive, small),
               "the opcode needs a value, and the stack is empty");
    std::string many;
    for (int i = 0; i < 21; ++i) many += "N0";
    check_says(refusal(pickled(many + "N"), StorageIds::Archive, small), "builds more than 20 objects");
    check_says(refusal(pickled("](NNNNNNNNNe"), StorageIds::Archive, small), "hold more than 8 references");
    check_says(refusal(pickled("N(e"), StorageIds::Archive, small), "APPEND or APPENDS on None, not on a list");
    check_says(refusal(pickled("]N(s")), "the opcode needs a value, and the stack is empty down to the last MARK");
    check_says(refusal(pickled("et")), "the opcode needs a MARK, and none is open");
}

BOOST_AUTO_TEST_CASE(opcode_names_cover_every_protocol) {
    BOOST_TEST(opcode_name('c') == "GLOBAL");
    BOOST_TEST(opcode_name(0x93) == "STACK_GLOBAL");
    BOOST_TEST(opcode_name(0x98) == "READONLY_BUFFER");
    BOOST_TEST(opcode_name('z').empty());
}

BOOST_AUTO_TEST_SUITE_END()
