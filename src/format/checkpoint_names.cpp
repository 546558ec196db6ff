#include "checkpoint_names.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

namespace tensorfs::pytorch {
namespace {

using pickle::Kind;
using pickle::Ref;
using pickle::Value;

// Python's own repr gives up on deeper nesting; real checkpoints nest a few levels.
constexpr std::size_t kMaxDepth = 1000;
// Objects visited: a container shared many times (a memo reference) is visited once per path to it, so a
// hostile pickle could make the walk exponential without this budget.
constexpr std::size_t kMaxVisits = std::size_t{1} << 22;
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

class Walker {
public:
    Walker(const pickle::Objects& objects, const std::string& root_name) : objects_(objects), root_name_(root_name) {}

    NamedObjects run(Ref root) {
        pending_.push_back({root, std::string(), 0});
        while (!pending_.empty()) {
            Pending next = std::move(pending_.back());
            pending_.pop_back();
            visit(next);
        }
        return std::move(named_);
    }

private:
    struct Pending {
        Ref ref;
        std::string name;  // dotted; "" at the root
        std::size_t depth;
    };

    void visit(const Pending& at) {
        if (++visits_ > kMaxVisits) {
            throw NamingError("the object reaches more than " + std::to_string(kMaxVisits) +
                              " values (containers shared many times)");
        }
        if (at.depth > kMaxDepth) {
            throw NamingError("the object nests deeper than " + std::to_string(kMaxDepth) +
                              " levels (or holds itself)");
        }
        const Value& value = objects_[at.ref];
        const std::string& name = at.depth == 0 ? root_name_ : at.name;
        switch (value.kind) {
            case Kind::Dict: {
                const auto items = objects_.items(value);
                // Children are taken from the back of `pending_`: push them last first.
                for (std::size_t i = items.size(); i >= 2; i -= 2) {
                    pending_.push_back({items[i - 1], join(at.name, key_text(items[i - 2])), at.depth + 1});
                }
                return;
            }
            case Kind::List:
            case Kind::Tuple:
            case Kind::Set: {
                const auto items = objects_.items(value);
                if (!items.empty() && all_plain(items)) return add_metadata(name, plain_list(items));
                for (std::size_t i = items.size(); i-- > 0;) {
                    pending_.push_back({items[i], join(at.name, std::to_string(i)), at.depth + 1});
                }
                return;
            }
            case Kind::Tensor:
                if (!tensor_names_.insert(name).second) {
                    throw NamingError("two tensors are named \"" + name + "\" (keys that join to the same dotted name)");
                }
                named_.tensors.push_back({name, &objects_.tensor(value)});
                return;
            case Kind::Global:
                // A dtype kept as a value (a config's torch_dtype), as Python prints it.
                if (value.global == pickle::Global::Dtype) add_metadata(name, "torch." + std::string(value.type->name));
                return;
            default:
                if (is_plain(value)) add_metadata(name, plain(value));
                return;  // bytes, storages and integers past 64 bits are not metadata
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

    void add_metadata(const std::string& name, nlohmann::ordered_json value) {
        if (!named_.metadata.contains(name)) named_.metadata[name] = std::move(value);
    }

    // A dict key as Python's str() writes it.
    std::string key_text(Ref key) const {
        const Value& value = objects_[key];
        switch (value.kind) {
            case Kind::String: return std::string(objects_.text(value));
            case Kind::Int: return std::to_string(value.integer);
            case Kind::Bool: return value.integer ? "True" : "False";
            case Kind::None: return "None";
            case Kind::Float: return float_text(value.real);
            default: throw NamingError("a dict has a key that is not a str or a number, so its values have no name");
        }
    }

    static std::string join(const std::string& prefix, const std::string& key) {
        return prefix.empty() ? key : prefix + "." + key;
    }

    const pickle::Objects& objects_;
    const std::string& root_name_;
    std::vector<Pending> pending_;
    NamedObjects named_;
    std::unordered_set<std::string> tensor_names_;
    std::size_t visits_ = 0;
};

}  // namespace

NamedObjects name_objects(const pickle::Objects& objects, pickle::Ref root, const std::string& root_name) {
    return Walker(objects, root_name).run(root);
}

}  // namespace tensorfs::pytorch
