// A restricted pickle interpreter for PyTorch checkpoints. It runs pickle protocols 2 to 5, only the opcodes that
// torch.save's pickles use, and builds plain data: a GLOBAL or STACK_GLOBAL resolves only the names of an
// allow-list of data builders (pickle_globals.cpp), and REDUCE "calls" only those, by building the data they
// would build. Nothing in the input is ever executed, imported or looked up by name outside that list.
//
// Hostile input is bounded: the machine is a loop over the input (no recursion, however deep the data nests),
// its stack, marks, memo and objects have limits, and every length is checked against the input that is left
// before anything is allocated for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pickle_objects.hpp"

namespace tensorfs::pickle {

// How a checkpoint names its storages (persistent ids, BINPERSID):
enum class StorageIds {
    Archive,  // zip format: ('storage', CLASS, KEY, LOCATION, NUMEL)
    Legacy,   // legacy format: ('storage', CLASS, KEY, LOCATION, NUMEL, VIEW), VIEW None or (KEY, OFFSET, NUMEL)
};

struct Limits {
    std::size_t stack = std::size_t{1} << 20;    // values on the stack
    std::size_t marks = std::size_t{1} << 16;    // MARKs open at once
    std::size_t memo = std::size_t{1} << 23;     // memo slots (indices are at most this)
    std::size_t objects = std::size_t{1} << 23;  // objects built
    std::size_t items = std::size_t{1} << 25;    // references held by tuples, lists, dicts and sets together
    std::size_t dims = 64;                       // dimensions of a tensor (PyTorch's own limit)
};

// Why the input was refused, at which byte of the pickle. `truncated`: the input ended before STOP.
class PickleError : public std::runtime_error {
public:
    PickleError(const std::string& what, std::uint64_t at, bool truncated = false)
        : std::runtime_error(what), at_(at), truncated_(truncated) {}
    std::uint64_t at() const { return at_; }
    bool truncated() const { return truncated_; }

private:
    std::uint64_t at_;
    bool truncated_;
};

struct Unpickled {
    Objects objects;
    Ref root = 0;
    std::uint64_t end = 0;  // bytes the pickle took, its STOP included
};

// Runs the pickle at the start of `bytes` up to its STOP; bytes after it are left alone. Throws PickleError.
Unpickled unpickle(std::span<const std::uint8_t> bytes, StorageIds ids, const Limits& limits = {});

// The machine behind unpickle(): opcodes in pickle_machine.cpp, the allow-list and what its names build in
// pickle_globals.cpp.
class Machine {
public:
    Machine(std::span<const std::uint8_t> bytes, StorageIds ids, const Limits& limits);
    Unpickled run();

private:
    void step(std::uint8_t opcode);

    // Input
    const std::uint8_t* take(std::size_t length, std::string_view what);
    std::uint64_t read_le(std::size_t length, std::string_view what);
    std::size_t read_length(std::size_t width, std::string_view what);
    std::string_view read_line(std::string_view what);

    // Objects and the stack
    Ref add(Value value);
    Ref add_text(Kind kind, std::string_view text);
    Ref add_container(Kind kind, std::vector<Ref> items);
    void push(Ref ref);
    Ref pop();
    Ref top() const;
    const Value& value(Ref ref) const { return objects_.values_[ref]; }
    std::vector<Ref> pop_to_mark();
    void count_items(std::size_t added);
    void put_memo(std::uint64_t index);
    Ref get_memo(std::uint64_t index) const;

    // Opcodes with more to them
    void push_long(std::size_t length);
    void push_unicode(std::size_t length);
    void add_to_list(std::vector<Ref> items);
    void add_to_dict(std::vector<Ref> items);
    void add_to_set(std::vector<Ref> items);
    void build();

    // pickle_globals.cpp
    Ref find_global(std::string_view module, std::string_view name);
    Ref reduce(Ref callable, Ref arguments);
    Ref persistent_load(Ref id);
    Ref rebuild_tensor(Global rebuild, std::span<const Ref> arguments);
    Ref build_device(std::span<const Ref> arguments);
    Ref build_bytes(std::span<const Ref> arguments);
    std::uint64_t natural(Ref ref, std::string_view what) const;
    std::vector<std::uint64_t> naturals(Ref ref, std::string_view what) const;
    std::string key_text(Ref ref, std::string_view what) const;
    std::string kind_name(Ref ref) const;

    [[noreturn]] void fail(const std::string& what) const;

    std::span<const std::uint8_t> bytes_;
    StorageIds ids_;
    Limits limits_;
    std::size_t position_ = 0;
    std::size_t opcode_at_ = 0;  // where the opcode being run starts, for messages
    bool stopped_ = false;
    Ref root_ = 0;
    Objects objects_;
    std::vector<Ref> stack_;
    std::vector<std::size_t> marks_;  // stack sizes at the open MARKs
    std::vector<Ref> memo_;
    std::size_t memo_count_ = 0;  // slots stored (Python's len(memo))
    std::size_t items_ = 0;
    std::unordered_map<std::string, std::uint32_t> storage_by_key_;
};

// The name of a pickle opcode ("BINUNICODE"), or "" for a byte that is none.
std::string_view opcode_name(std::uint8_t opcode);

}  // namespace tensorfs::pickle
