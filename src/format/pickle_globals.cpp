// The allow-list of the restricted pickle machine, and what each of its names builds when REDUCE "calls" it and
// when BINPERSID names a storage. Every name here builds data: tensors from storages, dicts, tuples, strings.
// Any other name (os.system, builtins.eval, posix.system, any class) is refused when GLOBAL or STACK_GLOBAL
// names it, before anything could call it.
#include <array>
#include <string_view>

#include "pickle_machine.hpp"

namespace tensorfs::pickle {
namespace {

struct Allowed {
    std::string_view module;
    std::string_view name;
    Global global;
};

constexpr std::array kBuilders{
    Allowed{"collections", "OrderedDict", Global::OrderedDict},
    Allowed{"torch._utils", "_rebuild_tensor", Global::RebuildTensor},
    Allowed{"torch._utils", "_rebuild_tensor_v2", Global::RebuildTensorV2},
    Allowed{"torch._utils", "_rebuild_tensor_v3", Global::RebuildTensorV3},
    Allowed{"torch._utils", "_rebuild_parameter", Global::RebuildParameter},
    Allowed{"torch._utils", "_rebuild_parameter_with_state", Global::RebuildParameterWithState},
    Allowed{"torch", "Size", Global::Size},
    Allowed{"torch", "device", Global::Device},
    // Python 3 names and the Python 2 names that protocol 2 pickles keep for them.
    Allowed{"builtins", "set", Global::Set},
    Allowed{"__builtin__", "set", Global::Set},
    Allowed{"builtins", "frozenset", Global::FrozenSet},
    Allowed{"__builtin__", "frozenset", Global::FrozenSet},
    Allowed{"builtins", "slice", Global::Slice},
    Allowed{"__builtin__", "slice", Global::Slice},
    Allowed{"_codecs", "encode", Global::Encode},  // bytes in a protocol 2 pickle: encode(text, 'latin1')
};

// A name in module torch and the dtype it stands for.
struct TorchName {
    std::string_view name;
    std::string_view dtype;
};

// torch.<Name>Storage: the typed storage classes torch.save names, by the dtype of their elements. New dtypes
// (float8, uint16...) are saved as UntypedStorage (bytes) with the dtype given to _rebuild_tensor_v3.
constexpr std::array kStorageClasses{
    TorchName{"DoubleStorage", "float64"},         TorchName{"FloatStorage", "float32"},
    TorchName{"HalfStorage", "float16"},           TorchName{"BFloat16Storage", "bfloat16"},
    TorchName{"LongStorage", "int64"},             TorchName{"IntStorage", "int32"},
    TorchName{"ShortStorage", "int16"},            TorchName{"CharStorage", "int8"},
    TorchName{"ByteStorage", "uint8"},             TorchName{"BoolStorage", "bool"},
    TorchName{"ComplexFloatStorage", "complex64"}, TorchName{"ComplexDoubleStorage", "complex128"},
    TorchName{"UntypedStorage", "uint8"},
};

// torch.<alias> for dtypes that torch also names otherwise (torch.float is torch.float32); the canonical names
// (torch.float32) are the type table's.
constexpr std::array kDtypeAliases{
    TorchName{"float", "float32"},    TorchName{"double", "float64"},     TorchName{"half", "float16"},
    TorchName{"long", "int64"},       TorchName{"int", "int32"},          TorchName{"short", "int16"},
    TorchName{"cfloat", "complex64"}, TorchName{"cdouble", "complex128"}, TorchName{"chalf", "complex32"},
};

std::string_view name_of(Global global) {
    for (const Allowed& allowed : kBuilders) {
        if (allowed.global == global) return allowed.name;
    }
    return {};
}

}  // namespace

Ref Machine::find_global(std::string_view module, std::string_view name) {
    Value value;
    value.kind = Kind::Global;
    for (const Allowed& allowed : kBuilders) {
        if (allowed.module == module && allowed.name == name) {
            value.global = allowed.global;
            return add(value);
        }
    }
    if (module == "torch") {
        for (const TorchName& storage : kStorageClasses) {
            if (storage.name == name) {
                value.global = Global::StorageClass;
                value.type = pytorch_dtype_by_name(storage.dtype);
                return add(value);
            }
        }
        std::string_view dtype = name;
        for (const TorchName& alias : kDtypeAliases) {
            if (alias.name == name) dtype = alias.dtype;
        }
        if ((value.type = pytorch_dtype_by_name(dtype)) != nullptr) {
            value.global = Global::Dtype;
            return add(value);
        }
    }
    fail("global " + std::string(module) + "." + std::string(name) +
         " is refused: only the names that build tensors and plain data are allowed, and nothing is ever called");
}

std::string Machine::kind_name(Ref ref) const {
    const Value& v = value(ref);
    switch (v.kind) {
        case Kind::None: return "None";
        case Kind::Bool: return "a bool";
        case Kind::Int: case Kind::BigInt: return "an int";
        case Kind::Float: return "a float";
        case Kind::String: return "a str";
        case Kind::Bytes: return "bytes";
        case Kind::Tuple: return "a tuple";
        case Kind::List: return "a list";
        case Kind::Dict: return "a dict";
        case Kind::Set: return "a set";
        case Kind::Storage: return "a storage";
        case Kind::Tensor: return "a tensor";
        case Kind::Global:
            if (v.global == Global::StorageClass) return "the storage class of " + std::string(v.type->name);
            if (v.global == Global::Dtype) return "the dtype " + std::string(v.type->name);
            return "the global " + std::string(name_of(v.global));
    }
    return "an object";
}

std::uint64_t Machine::natural(Ref ref, std::string_view what) const {
    const Value& v = value(ref);
    if (v.kind != Kind::Int || v.integer < 0) {
        fail(std::string(what) + " is " + (v.kind == Kind::Int ? std::to_string(v.integer) : kind_name(ref)) +
             ", not a non-negative integer");
    }
    return static_cast<std::uint64_t>(v.integer);
}

std::vector<std::uint64_t> Machine::naturals(Ref ref, std::string_view what) const {
    const Value& v = value(ref);
    if (v.kind != Kind::Tuple && v.kind != Kind::List) fail(std::string(what) + " is " + kind_name(ref) + ", not a tuple");
    const auto items = objects_.items(v);
    if (items.size() > limits_.dims) {
        fail(std::string(what) + " has " + std::to_string(items.size()) + " dimensions, more than " +
             std::to_string(limits_.dims));
    }
    std::vector<std::uint64_t> numbers;
    numbers.reserve(items.size());
    for (const Ref item : items) numbers.push_back(natural(item, what));
    return numbers;
}

std::string Machine::key_text(Ref ref, std::string_view what) const {
    const Value& v = value(ref);
    if (v.kind == Kind::String || v.kind == Kind::Bytes) return std::string(objects_.text(v));
    if (v.kind == Kind::Int) return std::to_string(v.integer);
    fail(std::string(what) + " is " + kind_name(ref) + ", not a str");
}

Ref Machine::reduce(Ref callable, Ref arguments) {
    const Value& function = value(callable);
    if (function.kind != Kind::Global) fail("REDUCE calls " + kind_name(callable) + ", which is not an allowed name");
    if (value(arguments).kind != Kind::Tuple) fail("REDUCE gives " + kind_name(arguments) + " as arguments, not a tuple");
    const std::vector<Ref> args(objects_.items(value(arguments)).begin(), objects_.items(value(arguments)).end());
    const auto expect_count = [&](std::size_t fewest, std::size_t most) {
        if (args.size() < fewest || args.size() > most) {
            fail(std::string(name_of(function.global)) + " takes " + std::to_string(fewest) +
                 (most > fewest ? " to " + std::to_string(most) : std::string()) + " arguments, not " +
                 std::to_string(args.size()));
        }
    };
    switch (function.global) {
        case Global::OrderedDict:
            expect_count(0, 0);
            return add_container(Kind::Dict, {});
        case Global::RebuildTensor:
        case Global::RebuildTensorV2:
        case Global::RebuildTensorV3:
            return rebuild_tensor(function.global, args);
        case Global::RebuildParameter:
        case Global::RebuildParameterWithState:
            expect_count(function.global == Global::RebuildParameter ? 3 : 4, function.global == Global::RebuildParameter ? 3 : 4);
            if (value(args[0]).kind != Kind::Tensor) fail("a parameter holds " + kind_name(args[0]) + ", not a tensor");
            return args[0];
        case Global::Size:
            expect_count(1, 1);
            naturals(args[0], "a torch.Size");
            return args[0];
        case Global::Device:
            return build_device(args);
        case Global::Set:
        case Global::FrozenSet: {
            expect_count(0, 1);
            if (args.empty()) return add_container(Kind::Set, {});
            const Value& items = value(args[0]);
            if (items.kind != Kind::List && items.kind != Kind::Tuple && items.kind != Kind::Set) {
                fail("a set is built from " + kind_name(args[0]) + ", not from a list");
            }
            const auto held = objects_.items(items);
            return add_container(Kind::Set, std::vector<Ref>(held.begin(), held.end()));
        }
        case Global::Slice: {
            expect_count(1, 3);
            // slice(stop), slice(start, stop), slice(start, stop, step): kept as (start, stop, step).
            const Ref none = add(Value{});
            if (args.size() == 1) return add_container(Kind::Tuple, {none, args[0], none});
            return add_container(Kind::Tuple, {args[0], args[1], args.size() == 3 ? args[2] : none});
        }
        case Global::Encode:
            return build_bytes(args);
        case Global::StorageClass:
        case Global::Dtype:
            break;
    }
    fail("REDUCE calls " + kind_name(callable) + ", which only names a type and builds nothing");
}

// torch.device('cpu'), torch.device('cuda', 0): kept as the text torch prints ("cuda:0").
Ref Machine::build_device(std::span<const Ref> args) {
    if (args.empty() || args.size() > 2 || value(args[0]).kind != Kind::String) {
        fail("torch.device takes a device type and an optional index");
    }
    std::string text(objects_.text(value(args[0])));
    if (args.size() == 2 && value(args[1]).kind != Kind::None) text += ":" + std::to_string(natural(args[1], "a device index"));
    return add_text(Kind::String, text);
}

// _codecs.encode(text, 'latin1'): how a protocol 2 pickle stores bytes (each character one byte).
Ref Machine::build_bytes(std::span<const Ref> args) {
    if (args.size() != 2 || value(args[0]).kind != Kind::String || value(args[1]).kind != Kind::String) {
        fail("_codecs.encode takes a str and the name of an encoding");
    }
    const std::string_view encoding = objects_.text(value(args[1]));
    if (encoding != "latin1" && encoding != "latin-1" && encoding != "iso-8859-1") {
        fail("_codecs.encode to " + std::string(encoding) + " is refused: only latin1 (bytes) is read");
    }
    std::string bytes;
    const std::string_view text = objects_.text(value(args[0]));
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto lead = static_cast<unsigned char>(text[i]);
        if (lead < 0x80) {
            bytes += static_cast<char>(lead);
        } else if ((lead & 0xE0) == 0xC0 && lead <= 0xC3 && i + 1 < text.size()) {  // U+0080..U+00FF
            bytes += static_cast<char>(((lead & 0x03) << 6) | (static_cast<unsigned char>(text[++i]) & 0x3F));
        } else {
            fail("_codecs.encode: the text has characters past U+00FF, which latin1 cannot encode");
        }
    }
    return add_text(Kind::Bytes, bytes);
}

// _rebuild_tensor(storage, storage_offset, size, stride)
// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
// _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype[, metadata])
Ref Machine::rebuild_tensor(Global rebuild, std::span<const Ref> args) {
    const std::size_t fewest = rebuild == Global::RebuildTensor ? 4 : rebuild == Global::RebuildTensorV2 ? 6 : 7;
    const std::size_t most = rebuild == Global::RebuildTensor ? 4 : fewest + 1;
    if (args.size() < fewest || args.size() > most) {
        fail(std::string(name_of(rebuild)) + " takes " + std::to_string(fewest) +
             (most > fewest ? " or " + std::to_string(most) : std::string()) + " arguments, not " +
             std::to_string(args.size()));
    }
    const Value& storage = value(args[0]);
    if (storage.kind != Kind::Storage) fail("a tensor is built on " + kind_name(args[0]) + ", not on a storage");
    TensorRecord tensor;
    tensor.slice = storage.index;
    tensor.storage_offset = natural(args[1], "a tensor's storage offset");
    tensor.shape = naturals(args[2], "a tensor's size");
    tensor.stride = naturals(args[3], "a tensor's stride");
    if (tensor.stride.size() != tensor.shape.size()) {
        fail("a tensor has " + std::to_string(tensor.shape.size()) + " sizes but " +
             std::to_string(tensor.stride.size()) + " strides");
    }
    tensor.type = objects_.storages_[objects_.slices_[storage.index].storage].type;
    if (rebuild == Global::RebuildTensorV3) {
        const Value& dtype = value(args[6]);
        if (dtype.kind != Kind::Global || dtype.global != Global::Dtype) {
            fail("_rebuild_tensor_v3 gives " + kind_name(args[6]) + " as the dtype");
        }
        tensor.type = dtype.type;
    }
    // The metadata of a tensor: torch records its negative and conjugate bits there. A negative bit would make
    // its values the negation of its stored ones; no checkpoint of weights has one.
    if (args.size() == most && rebuild != Global::RebuildTensor) {
        const Value& metadata = value(args[most - 1]);
        if (metadata.kind == Kind::Dict) {
            const auto items = objects_.items(metadata);
            for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
                const Value& key = value(items[i]);
                const Value& set = value(items[i + 1]);
                if (key.kind == Kind::String && objects_.text(key) == "neg" && set.kind == Kind::Bool && set.integer) {
                    fail("a tensor has its negative bit set (a lazy negation), which is not read");
                }
            }
        } else if (metadata.kind != Kind::None) {
            fail("a tensor's metadata is " + kind_name(args[most - 1]) + ", not a dict");
        }
    }
    tensor.at_byte = opcode_at_;
    objects_.tensors_.push_back(std::move(tensor));
    Value made;
    made.kind = Kind::Tensor;
    made.index = static_cast<std::uint32_t>(objects_.tensors_.size() - 1);
    return add(made);
}

// ('storage', CLASS, KEY, LOCATION, NUMEL) in the zip format; the legacy format adds VIEW: None, or
// (VIEW_KEY, OFFSET, NUMEL) for a view of part of the storage.
Ref Machine::persistent_load(Ref id) {
    const Value& tuple = value(id);
    if (tuple.kind != Kind::Tuple) fail("BINPERSID names " + kind_name(id) + ", not a storage tuple");
    const auto items = objects_.items(tuple);
    const std::size_t expected = ids_ == StorageIds::Archive ? 5 : 6;
    const Value& first = items.empty() ? value(id) : value(items[0]);
    if (items.empty() || (first.kind != Kind::String && first.kind != Kind::Bytes) ||
        objects_.text(first) != "storage") {
        fail("BINPERSID names something other than a storage ('storage', ...)");
    }
    if (items.size() != expected) {
        fail("a storage id has " + std::to_string(items.size()) + " fields, not " + std::to_string(expected));
    }
    const Value& storage_class = value(items[1]);
    if (storage_class.kind != Kind::Global || storage_class.global != Global::StorageClass) {
        fail("a storage id gives " + kind_name(items[1]) + " as its storage class");
    }
    StorageRecord record;
    record.key = key_text(items[2], "a storage key");
    record.type = storage_class.type;
    record.numel = natural(items[4], "a storage's element count");
    record.at_byte = opcode_at_;
    const Value& location = value(items[3]);
    if (location.kind != Kind::String && location.kind != Kind::Bytes) {
        fail("a storage's location is " + kind_name(items[3]) + ", not a str");
    }

    const auto [found, added] =
        storage_by_key_.emplace(record.key, static_cast<std::uint32_t>(objects_.storages_.size()));
    if (added) {
        objects_.storages_.push_back(record);
    } else {
        const StorageRecord& earlier = objects_.storages_[found->second];
        if (earlier.type != record.type || earlier.numel != record.numel) {
            fail("storage " + record.key + " is named as " + std::to_string(earlier.numel) + " elements of " +
                 std::string(earlier.type->name) + " and as " + std::to_string(record.numel) + " elements of " +
                 std::string(record.type->name));
        }
    }
    StorageSlice slice{found->second, 0, record.numel};
    if (ids_ == StorageIds::Legacy && value(items[5]).kind != Kind::None) {
        const Value& view = value(items[5]);
        const auto fields = view.kind == Kind::Tuple ? objects_.items(view) : std::span<const Ref>{};
        if (fields.size() != 3) fail("a storage view is " + kind_name(items[5]) + ", not (key, offset, size)");
        slice.first = natural(fields[1], "a storage view's offset");
        slice.count = natural(fields[2], "a storage view's size");
        if (slice.first > record.numel || slice.count > record.numel - slice.first) {
            fail("a view of storage " + record.key + " takes elements [" + std::to_string(slice.first) + ", +" +
                 std::to_string(slice.count) + ") of its " + std::to_string(record.numel));
        }
    }
    if (objects_.slices_.size() >= limits_.objects) fail("the pickle names too many storages");
    objects_.slices_.push_back(slice);
    Value made;
    made.kind = Kind::Storage;
    made.index = static_cast<std::uint32_t>(objects_.slices_.size() - 1);
    return add(made);
}

}  // namespace tensorfs::pickle
