#include "checkpoint_names.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

#include "file_contents.hpp"

namespace tensorfs::pytorch {
namespace {

using pickle::Kind;
using pickle::Ref;
using pickle::Value;

// Python's own repr gives up on deeper nesting; real checkpoints nest a few levels.
constexpr std::size_t kMaxDepth = 1000;
// Values visited: a container shared many times (a memo reference) is visited once per path to it, so a hostile
// pickle could make the walk exponential without a budget. A checkpoint visits about one value per object it
// pickled (more when it saves one dict under several names): the budget is a few times that, and at most 2 Mi.
constexpr std::size_t kVisitsPerObject = 4;
constexpr std::size_t kLeastVisits = std::size_t{1} << 16;
constexpr std::size_t kMaxVisits = std::size_t{1} << 21;
// Bytes of names: the longest one, and all those written (keys joined while walking, names given to tensors and
// metadata), so that a long key reached by many paths cannot make the walk copy without end.
constexpr std::size_t kMaxNameBytes = std::size_t{64} << 10;
constexpr std::uint64_t kMaxNameBytesWritten = std::uint64_t{256} << 20;
// A list of plain values up to this long is one metadata value; a longer one is summarized.
constexpr std::size_t kMaxMetadataList = 4096;

bool is_plain(const Value& value) {
    return value.kind == Kind::None || value.kind == Kind::Bool || value.kind == Kind::Int ||
           value.kind == Kind::Float || value.kind == Kind::String;
}

// A float as Python's repr writes it for the common cases: the shortest text that reads back the same.
std::string float_text(double real) {
    if (std::isnan(real)) return "nan";
    if (std::isinf(real)) return real < 0 ? "-inf" : "inf";
    char text[32];
    for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, real);
        if (std::strtod(text, nullptr) == real) break;
    }
    std::string result(text);
    if (result.find_first_of(".eni") == std::string::npos) result += ".0";
    return result;
}

// A depth-first walk with one frame per open container (no recursion, memory bounded by the depth): the dotted
// name of the value being visited is kept in one string, cut back and extended as the walk moves.
class Walker {
public:
    Walker(const pickle::Objects& objects, const std::string& root_name)
        : objects_(objects),
          root_name_(root_name),
          max_visits_(std::min(kMaxVisits, kLeastVisits + kVisitsPerObject * objects.size())) {}

    NamedObjects run(Ref root) {
        visit(root);
        while (!frames_.empty()) {
            Frame& frame = frames_.back();
            const Value& container = objects_[frame.container];
            const auto items = objects_.items(container);
            if (frame.next >= items.size()) {
                frames_.pop_back();
                continue;
            }
            name_.resize(frame.name_length);
            if (frames_.size() > 1) name_ += '.';
            Ref child = items[frame.next];
            if (container.kind == Kind::Dict) {
                append_key(items[frame.next]);
                child = items[frame.next + 1];
                frame.next += 2;
            } else {
                append(std::to_string(frame.next));
                frame.next += 1;
            }
            visit(child);
        }
        return std::move(named_);
    }

private:
    struct Frame {
        Ref container;
        std::size_t next;         // index of the next item
        std::size_t name_length;  // of the container's own name
    };

    void visit(Ref ref) {
        if (++visits_ > max_visits_) {
            throw NamingError("the object reaches more than " + std::to_string(max_visits_) + " values from " +
                              std::to_string(objects_.size()) + " objects (containers shared many times)");
        }
        const Value& value = objects_[ref];
        switch (value.kind) {
            case Kind::List:
            case Kind::Tuple:
            case Kind::Set:
                if (const auto items = objects_.items(value); !items.empty() && all_plain(items)) {
                    return add_metadata(plain_list(items));
                }
                [[fallthrough]];
            case Kind::Dict:
                if (frames_.size() >= kMaxDepth) {
                    throw NamingError("the object nests deeper than " + std::to_string(kMaxDepth) +
                                      " levels (or holds itself)");
                }
                frames_.push_back(Frame{ref, 0, name_.size()});
                return;
            case Kind::Tensor: {
                const std::string& name = written_name();
                if (!tensor_names_.insert(name).second) {
                    throw NamingError("two tensors are named \"" + name + "\" (keys that join to the same dotted name)");
                }
                named_.tensors.push_back({name, &objects_.tensor(value)});
                return;
            }
            case Kind::Global:
                // A dtype kept as a value (a config's torch_dtype), as Python prints it.
                if (value.global == pickle::Global::Dtype) add_metadata("torch." + std::string(value.type->name));
                return;
            default:
                if (is_plain(value)) add_metadata(plain(value));
                return;  // bytes, storages and integers past 64 bits are not metadata
        }
    }

    // The name of the value being visited, counted against the budget of names written.
    const std::string& written_name() {
        const std::string& name = frames_.empty() ? root_name_ : name_;
        count_written(name.size());
        return name;
    }

    void count_written(std::size_t bytes) {
        written_ += bytes;
        if (written_ > kMaxNameBytesWritten) {
            throw NamingError("the names of the object's values take more than " +
                              std::to_string(kMaxNameBytesWritten) + " bytes");
        }
    }

    void append(std::string_view key) {
        count_written(key.size());
        if (name_.size() + key.size() > kMaxNameBytes) {
            throw NamingError("a dotted name is longer than " + std::to_string(kMaxNameBytes) + " bytes");
        }
        name_ += key;
    }

    // A dict key as Python's str() writes it.
    void append_key(Ref key) {
        const Value& value = objects_[key];
        switch (value.kind) {
            case Kind::String: return append(objects_.text(value));
            case Kind::Int: return append(std::to_string(value.integer));
            case Kind::Bool: return append(value.integer ? "True" : "False");
            case Kind::None: return append("None");
            case Kind::Float: return append(float_text(value.real));
            default: throw NamingError("a dict has a key that is not a str or a number, so its values have no name");
        }
    }

    bool all_plain(std::span<const Ref> items) const {
        for (const Ref item : items) {
            if (!is_plain(objects_[item])) return false;
        }
        return true;
    }

    nlohmann::ordered_json plain(const Value& value) const {
        switch (value.kind) {
            case Kind::Bool: return value.integer != 0;
            case Kind::Int: return value.integer;
            case Kind::Float: return value.real;
            case Kind::String: return std::string(objects_.text(value));
            default: return nullptr;
        }
    }

    nlohmann::ordered_json plain_list(std::span<const Ref> items) const {
        if (items.size() > kMaxMetadataList) return "a list of " + std::to_string(items.size()) + " values";
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (const Ref item : items) list.push_back(plain(objects_[item]));
        return list;
    }

    // The first value of a name is kept.
    void add_metadata(nlohmann::ordered_json value) {
        const std::string& name = written_name();
        if (metadata_names_.insert(name).second) append_new_key(named_.metadata, name, std::move(value));
    }

    const pickle::Objects& objects_;
    const std::string& root_name_;
    const std::size_t max_visits_;
    std::vector<Frame> frames_;
    std::string name_;  // dotted name of the value being visited
    NamedObjects named_;
    std::unordered_set<std::string> tensor_names_;
    std::unordered_set<std::string> metadata_names_;
    std::size_t visits_ = 0;
    std::uint64_t written_ = 0;
};

}  // namespace

NamedObjects name_objects(const pickle::Objects& objects, pickle::Ref root, const std::string& root_name) {
    return Walker(objects, root_name).run(root);
}

}  // namespace tensorfs::pytorch
