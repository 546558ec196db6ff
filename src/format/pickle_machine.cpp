// The opcodes of the restricted pickle machine. Opcode meanings follow CPython's Lib/pickle.py and the protocol
// descriptions of Lib/pickletools.py; only the ones that pickle protocols 2 to 5 write for plain data are run.
#include "pickle_machine.hpp"

#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>

#include "safetensors_json.hpp"

namespace tensorfs::pickle {
namespace {

// Every opcode of protocols 0 to 5, by byte.
struct Opcode {
    std::uint8_t byte;
    std::string_view name;
};
constexpr std::array kOpcodes{
    Opcode{'(', "MARK"},           Opcode{'.', "STOP"},          Opcode{'0', "POP"},
    Opcode{'1', "POP_MARK"},       Opcode{'2', "DUP"},           Opcode{'F', "FLOAT"},
    Opcode{'I', "INT"},            Opcode{'J', "BININT"},        Opcode{'K', "BININT1"},
    Opcode{'L', "LONG"},           Opcode{'M', "BININT2"},       Opcode{'N', "NONE"},
    Opcode{'P', "PERSID"},         Opcode{'Q', "BINPERSID"},     Opcode{'R', "REDUCE"},
    Opcode{'S', "STRING"},         Opcode{'T', "BINSTRING"},     Opcode{'U', "SHORT_BINSTRING"},
    Opcode{'V', "UNICODE"},        Opcode{'X', "BINUNICODE"},    Opcode{'a', "APPEND"},
    Opcode{'b', "BUILD"},          Opcode{'c', "GLOBAL"},        Opcode{'d', "DICT"},
    Opcode{'}', "EMPTY_DICT"},     Opcode{'e', "APPENDS"},       Opcode{'g', "GET"},
    Opcode{'h', "BINGET"},         Opcode{'i', "INST"},          Opcode{'j', "LONG_BINGET"},
    Opcode{'l', "LIST"},           Opcode{']', "EMPTY_LIST"},    Opcode{'o', "OBJ"},
    Opcode{'p', "PUT"},            Opcode{'q', "BINPUT"},        Opcode{'r', "LONG_BINPUT"},
    Opcode{'s', "SETITEM"},        Opcode{'t', "TUPLE"},         Opcode{')', "EMPTY_TUPLE"},
    Opcode{'u', "SETITEMS"},       Opcode{'G', "BINFLOAT"},      Opcode{0x80, "PROTO"},
    Opcode{0x81, "NEWOBJ"},        Opcode{0x82, "EXT1"},         Opcode{0x83, "EXT2"},
    Opcode{0x84, "EXT4"},          Opcode{0x85, "TUPLE1"},       Opcode{0x86, "TUPLE2"},
    Opcode{0x87, "TUPLE3"},        Opcode{0x88, "NEWTRUE"},      Opcode{0x89, "NEWFALSE"},
    Opcode{0x8a, "LONG1"},         Opcode{0x8b, "LONG4"},        Opcode{'B', "BINBYTES"},
    Opcode{'C', "SHORT_BINBYTES"}, Opcode{0x8c, "SHORT_BINUNICODE"}, Opcode{0x8d, "BINUNICODE8"},
    Opcode{0x8e, "BINBYTES8"},     Opcode{0x8f, "EMPTY_SET"},    Opcode{0x90, "ADDITEMS"},
    Opcode{0x91, "FROZENSET"},     Opcode{0x92, "NEWOBJ_EX"},    Opcode{0x93, "STACK_GLOBAL"},
    Opcode{0x94, "MEMOIZE"},       Opcode{0x95, "FRAME"},        Opcode{0x96, "BYTEARRAY8"},
    Opcode{0x97, "NEXT_BUFFER"},   Opcode{0x98, "READONLY_BUFFER"},
};

// Why an opcode that exists is refused.
std::string_view refusal_of(std::uint8_t opcode) {
    switch (opcode) {
        case 'i': case 'o': case 0x81: case 0x92:
            return "it creates an instance of a class, which would run that class's code";
        case 0x82: case 0x83: case 0x84:
            return "it looks up the copyreg extension registry";
        case 0x97: case 0x98:
            return "out-of-band buffers are not part of a file";
        case 'P':
            return "text persistent ids belong to protocol 0, which torch.save does not write";
        default:
            return "it belongs to pickle protocols 0 and 1, which torch.save does not write";
    }
}

constexpr std::size_t kMaxLineBytes = 256;  // a GLOBAL's module or name
constexpr Ref kNoMemo = std::numeric_limits<Ref>::max();

}  // namespace

std::string_view opcode_name(std::uint8_t opcode) {
    for (const Opcode& known : kOpcodes) {
        if (known.byte == opcode) return known.name;
    }
    return {};
}

Unpickled unpickle(std::span<const std::uint8_t> bytes, StorageIds ids, const Limits& limits) {
    return Machine(bytes, ids, limits).run();
}

Machine::Machine(std::span<const std::uint8_t> bytes, StorageIds ids, const Limits& limits)
    : bytes_(bytes), ids_(ids), limits_(limits) {}

Unpickled Machine::run() {
    const std::uint8_t first = *take(1, "the PROTO opcode");
    if (first != 0x80) {
        opcode_at_ = 0;
        fail("the pickle does not start with PROTO: protocols 0 and 1 are not read (torch.save writes 2 or later)");
    }
    position_ = 0;
    while (!stopped_) {
        opcode_at_ = position_;
        step(*take(1, "the next opcode"));
    }
    Unpickled result;
    result.root = root_;
    result.end = position_;
    result.objects = std::move(objects_);
    return result;
}

void Machine::fail(const std::string& what) const { throw PickleError(what, opcode_at_); }

const std::uint8_t* Machine::take(std::size_t length, std::string_view what) {
    if (length > bytes_.size() - position_) {
        throw PickleError("the pickle ends inside " + std::string(what) + " (it needs " + std::to_string(length) +
                              " bytes, " + std::to_string(bytes_.size() - position_) + " are left)",
                          opcode_at_, true);
    }
    const std::uint8_t* at = bytes_.data() + position_;
    position_ += length;
    return at;
}

std::uint64_t Machine::read_le(std::size_t length, std::string_view what) {
    const std::uint8_t* at = take(length, what);
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < length; ++i) value |= std::uint64_t{at[i]} << (8 * i);
    return value;
}

// A length field, checked against what is left of the input before anything is allocated for it.
std::size_t Machine::read_length(std::size_t width, std::string_view what) {
    const std::uint64_t length = read_le(width, what);
    if (length > bytes_.size() - position_) {
        throw PickleError(std::string(what) + " claims " + std::to_string(length) + " bytes, but only " +
                              std::to_string(bytes_.size() - position_) + " are left in the pickle",
                          opcode_at_, true);
    }
    return static_cast<std::size_t>(length);
}

std::string_view Machine::read_line(std::string_view what) {
    const std::size_t left = bytes_.size() - position_;
    const auto* start = reinterpret_cast<const char*>(bytes_.data() + position_);
    const auto* end = static_cast<const char*>(std::memchr(start, '\n', std::min(left, kMaxLineBytes + 1)));
    if (end == nullptr) {
        if (left <= kMaxLineBytes) throw PickleError("the pickle ends inside " + std::string(what), opcode_at_, true);
        fail(std::string(what) + " is longer than " + std::to_string(kMaxLineBytes) + " bytes");
    }
    const std::string_view line(start, static_cast<std::size_t>(end - start));
    position_ += line.size() + 1;
    return line;
}

Ref Machine::add(Value value) {
    if (objects_.values_.size() >= limits_.objects) {
        fail("the pickle builds more than " + std::to_string(limits_.objects) + " objects");
    }
    objects_.values_.push_back(value);
    return static_cast<Ref>(objects_.values_.size() - 1);
}

Ref Machine::add_text(Kind kind, std::string_view text) {
    objects_.texts_.emplace_back(text);
    Value value;
    value.kind = kind;
    value.index = static_cast<std::uint32_t>(objects_.texts_.size() - 1);
    return add(value);
}

Ref Machine::add_container(Kind kind, std::vector<Ref> items) {
    count_items(items.size());
    objects_.items_.push_back(std::move(items));
    Value value;
    value.kind = kind;
    value.index = static_cast<std::uint32_t>(objects_.items_.size() - 1);
    return add(value);
}

void Machine::count_items(std::size_t added) {
    items_ += added;
    if (items_ > limits_.items) {
        fail("the pickle's containers hold more than " + std::to_string(limits_.items) + " references");
    }
}

void Machine::push(Ref ref) {
    if (stack_.size() >= limits_.stack) fail("the stack grows past " + std::to_string(limits_.stack) + " values");
    stack_.push_back(ref);
}

Ref Machine::pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) {
        fail("the opcode needs a value, and the stack is empty" +
             std::string(marks_.empty() ? "" : " down to the last MARK"));
    }
    const Ref ref = stack_.back();
    stack_.pop_back();
    return ref;
}

Ref Machine::top() const {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) {
        fail("the opcode needs a value, and the stack is empty");
    }
    return stack_.back();
}

std::vector<Ref> Machine::pop_to_mark() {
    if (marks_.empty()) fail("the opcode needs a MARK, and none is open");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Ref> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
}

void Machine::put_memo(std::uint64_t index) {
    if (index >= limits_.memo) {
        fail("memo index " + std::to_string(index) + " is over the limit of " + std::to_string(limits_.memo));
    }
    if (index >= memo_.size()) memo_.resize(static_cast<std::size_t>(index) + 1, kNoMemo);
    Ref& slot = memo_[static_cast<std::size_t>(index)];
    if (slot == kNoMemo) ++memo_count_;
    slot = top();
}

Ref Machine::get_memo(std::uint64_t index) const {
    if (index >= memo_.size() || memo_[static_cast<std::size_t>(index)] == kNoMemo) {
        fail("memo index " + std::to_string(index) + " was never stored");
    }
    return memo_[static_cast<std::size_t>(index)];
}

void Machine::push_long(std::size_t length) {
    const std::uint8_t* digits = take(length, "a long integer");
    if (length <= 8) {
        std::uint64_t bits = 0;
        for (std::size_t i = 0; i < length; ++i) bits |= std::uint64_t{digits[i]} << (8 * i);
        if (length > 0 && length < 8 && (digits[length - 1] & 0x80) != 0) bits |= ~std::uint64_t{0} << (8 * length);
        Value value;
        value.kind = Kind::Int;
        value.integer = static_cast<std::int64_t>(bits);
        return push(add(value));
    }
    push(add_text(Kind::BigInt, std::string_view(reinterpret_cast<const char*>(digits), length)));
}

void Machine::push_unicode(std::size_t length) {
    const auto* start = reinterpret_cast<const char*>(take(length, "a string"));
    const std::string_view text(start, length);
    // Python refuses such a pickle too (UnicodeDecodeError).
    if (const auto bad = safetensors::find_invalid_utf8(text)) {
        fail("a string is not valid UTF-8 (at its byte " + std::to_string(*bad) + ")");
    }
    push(add_text(Kind::String, text));
}

void Machine::add_to_list(std::vector<Ref> items) {
    const Value& list = value(top());
    if (list.kind != Kind::List) fail("APPEND or APPENDS on " + kind_name(top()) + ", not on a list");
    count_items(items.size());
    auto& held = objects_.items_[list.index];
    held.insert(held.end(), items.begin(), items.end());
}

void Machine::add_to_dict(std::vector<Ref> items) {
    const Value& dict = value(top());
    if (dict.kind != Kind::Dict) fail("SETITEM or SETITEMS on " + kind_name(top()) + ", not on a dict");
    if (items.size() % 2 != 0) fail("SETITEMS with a key that has no value");
    count_items(items.size());
    auto& held = objects_.items_[dict.index];
    held.insert(held.end(), items.begin(), items.end());
}

void Machine::add_to_set(std::vector<Ref> items) {
    const Value& set = value(top());
    if (set.kind != Kind::Set) fail("ADDITEMS on " + kind_name(top()) + ", not on a set");
    count_items(items.size());
    auto& held = objects_.items_[set.index];
    held.insert(held.end(), items.begin(), items.end());
}

// BUILD sets an object's state (its attributes). torch.save writes it for the OrderedDict of a module's
// state_dict, whose _metadata attribute holds the modules' versions: on a dict the state is not part of its items,
// and is dropped. On anything else it would mean setting attributes of an object we never create.
void Machine::build() {
    const Ref state = pop();
    (void)state;
    if (value(top()).kind != Kind::Dict) fail("BUILD (set the state of) " + kind_name(top()) + " is not allowed");
}

void Machine::step(std::uint8_t opcode) {
    switch (opcode) {
        case 0x80: {  // PROTO
            const std::uint8_t protocol = *take(1, "the protocol number");
            if (protocol < 2 || protocol > 5) {
                fail("pickle protocol " + std::to_string(protocol) + " is not read (only 2 to 5)");
            }
            return;
        }
        case 0x95:  // FRAME: a hint for buffered readers; the whole pickle is in memory here
            read_length(8, "a FRAME");
            return;
        case '.':  // STOP
            root_ = top();
            stopped_ = true;
            return;

        case '(':  // MARK
            if (marks_.size() >= limits_.marks) fail("more than " + std::to_string(limits_.marks) + " MARKs are open");
            marks_.push_back(stack_.size());
            return;
        case '0':  // POP
            pop();
            return;
        case '1':  // POP_MARK
            pop_to_mark();
            return;

        case 'N': return push(add(Value{}));
        case 0x88:    // NEWTRUE
        case 0x89: {  // NEWFALSE
            Value value;
            value.kind = Kind::Bool;
            value.integer = opcode == 0x88;
            return push(add(value));
        }
        case 'J': case 'K': case 'M': {  // BININT, BININT1, BININT2
            Value value;
            value.kind = Kind::Int;
            if (opcode == 'J') {
                value.integer = static_cast<std::int32_t>(static_cast<std::uint32_t>(read_le(4, "a BININT")));
            } else {
                value.integer = static_cast<std::int64_t>(read_le(opcode == 'K' ? 1 : 2, "an integer"));
            }
            return push(add(value));
        }
        case 0x8a:  // LONG1
            return push_long(read_length(1, "a LONG1"));
        case 0x8b: return push_long(read_length(4, "a LONG4"));  // signed, but a negative one is too long
        case 'G': {  // BINFLOAT: big-endian IEEE double
            const std::uint8_t* at = take(8, "a BINFLOAT");
            std::uint64_t bits = 0;
            for (int i = 0; i < 8; ++i) bits = bits << 8 | at[i];
            Value value;
            value.kind = Kind::Float;
            value.real = std::bit_cast<double>(bits);
            return push(add(value));
        }

        case 'X': return push_unicode(read_length(4, "a BINUNICODE"));
        case 0x8c: return push_unicode(read_length(1, "a SHORT_BINUNICODE"));
        case 0x8d: return push_unicode(read_length(8, "a BINUNICODE8"));
        // Python 2 str, which torch.load decodes as UTF-8.
        case 'T': return push_unicode(read_length(4, "a BINSTRING"));  // signed, but a negative one is too long
        case 'U': return push_unicode(read_length(1, "a SHORT_BINSTRING"));
        case 'B': case 'C': case 0x8e: case 0x96: {  // BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
            const std::size_t width = opcode == 'B' ? 4 : opcode == 'C' ? 1 : 8;
            const std::size_t length = read_length(width, "a bytes object");
            const auto* start = reinterpret_cast<const char*>(take(length, "a bytes object"));
            return push(add_text(Kind::Bytes, std::string_view(start, length)));
        }

        case ')': return push(add_container(Kind::Tuple, {}));
        case ']': return push(add_container(Kind::List, {}));
        case '}': return push(add_container(Kind::Dict, {}));
        case 0x8f: return push(add_container(Kind::Set, {}));
        case 't': return push(add_container(Kind::Tuple, pop_to_mark()));
        case 0x91: return push(add_container(Kind::Set, pop_to_mark()));
        case 0x85: case 0x86: case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
            std::vector<Ref> items(static_cast<std::size_t>(opcode - 0x84));
            for (auto item = items.rbegin(); item != items.rend(); ++item) *item = pop();
            return push(add_container(Kind::Tuple, std::move(items)));
        }
        case 'a': {  // APPEND
            const Ref item = pop();
            return add_to_list({item});
        }
        case 'e': return add_to_list(pop_to_mark());
        case 's': {  // SETITEM
            const Ref item = pop();
            const Ref key = pop();
            return add_to_dict({key, item});
        }
        case 'u': return add_to_dict(pop_to_mark());
        case 0x90: return add_to_set(pop_to_mark());

        case 'q': return put_memo(read_le(1, "a BINPUT"));
        case 'r': return put_memo(read_le(4, "a LONG_BINPUT"));
        case 0x94: return put_memo(memo_count_);  // MEMOIZE: the next slot is the number of slots stored
        case 'h': return push(get_memo(read_le(1, "a BINGET")));
        case 'j': return push(get_memo(read_le(4, "a LONG_BINGET")));

        case 'c': {  // GLOBAL
            const std::string module(read_line("the module of a GLOBAL"));
            const std::string name(read_line("the name of a GLOBAL"));
            return push(find_global(module, name));
        }
        case 0x93: {  // STACK_GLOBAL
            const Ref name = pop();
            const Ref module = pop();
            if (value(module).kind != Kind::String || value(name).kind != Kind::String) {
                fail("STACK_GLOBAL needs two strings, not " + kind_name(module) + " and " + kind_name(name));
            }
            return push(find_global(objects_.text(value(module)), objects_.text(value(name))));
        }
        case 'R': {  // REDUCE
            const Ref arguments = pop();
            const Ref callable = pop();
            return push(reduce(callable, arguments));
        }
        case 'Q':  // BINPERSID
            return push(persistent_load(pop()));
        case 'b':
            return build();

        default: {
            const std::string_view name = opcode_name(opcode);
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02X", opcode);
            if (name.empty()) fail("byte " + std::string(hex) + " is not a pickle opcode");
            fail("opcode " + std::string(name) + " (" + hex + ") is refused: " + std::string(refusal_of(opcode)));
        }
    }
}

}  // namespace tensorfs::pickle
