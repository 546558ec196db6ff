// The objects a restricted unpickling builds: plain data (numbers, strings, tuples, lists, dicts, sets), the names
// of the allow-list, and the tensors and storage references of a PyTorch checkpoint. Nothing here can run code: a
// "global" is only a tag saying which allowed name it was, and building a tensor only records its description.
//
// Objects live in one arena and refer to each other by index, as Python objects refer to each other: a memoized
// dict that is filled after being put into a list is the same dict in both places, and a list may even contain
// itself. The arena frees all at once, so no such shape costs a recursion or a leak.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensorfs/dtype.hpp"

namespace tensorfs::pickle {

using Ref = std::uint32_t;

enum class Kind : std::uint8_t {
    None,
    Bool,
    Int,      // fits in 64 bits
    BigInt,   // a LONG1/LONG4 integer too wide for 64 bits: its little-endian two's complement bytes
    Float,
    String,
    Bytes,
    Tuple,
    List,
    Dict,     // dict or collections.OrderedDict: items are key, value, key, value...
    Set,      // set or frozenset
    Global,   // a name of the allow-list (see Global)
    Storage,  // a storage reference (BINPERSID), or a legacy view of one
    Tensor,
};

// The names a checkpoint may refer to (pickle_globals.cpp has the allow-list that maps module and name to these).
enum class Global : std::uint8_t {
    OrderedDict,                // collections.OrderedDict
    RebuildTensor,              // torch._utils._rebuild_tensor
    RebuildTensorV2,            // torch._utils._rebuild_tensor_v2
    RebuildTensorV3,            // torch._utils._rebuild_tensor_v3
    RebuildParameter,           // torch._utils._rebuild_parameter
    RebuildParameterWithState,  // torch._utils._rebuild_parameter_with_state
    Size,                       // torch.Size
    Device,                     // torch.device
    Set,                        // builtins.set
    FrozenSet,                  // builtins.frozenset
    Slice,                      // builtins.slice
    Encode,                     // _codecs.encode
    StorageClass,               // torch.FloatStorage, ..., torch.UntypedStorage: Value::type is its element type
    Dtype,                      // torch.float32, ...: Value::type is the dtype
};

struct Value {
    Kind kind = Kind::None;
    Global global = Global::OrderedDict;  // Kind::Global
    std::uint32_t index = 0;  // String, Bytes, BigInt: text; Tuple, List, Dict, Set: items; Storage; Tensor
    std::int64_t integer = 0;            // Bool (0 or 1), Int
    double real = 0;                     // Float
    const TypeTraits* type = nullptr;    // Global StorageClass and Dtype
};

// One storage of the checkpoint, as its persistent id names it: ('storage', CLASS, KEY, LOCATION, NUMEL).
struct StorageRecord {
    std::string key;
    const TypeTraits* type = nullptr;  // element type of the storage class (uint8 for UntypedStorage)
    std::uint64_t numel = 0;           // elements of that type
    std::uint64_t at_byte = 0;         // the BINPERSID that first named it, in the pickle
};

// What a Storage value refers to: elements [first, first + count) of a storage (the whole storage, except for the
// views of the legacy format).
struct StorageSlice {
    std::uint32_t storage = 0;  // index into Objects::storages()
    std::uint64_t first = 0;
    std::uint64_t count = 0;
};

// A tensor as the rebuild function received it; nothing is checked against its storage yet.
struct TensorRecord {
    std::uint32_t slice = 0;           // index into Objects::slices()
    const TypeTraits* type = nullptr;  // the tensor's dtype
    std::uint64_t storage_offset = 0;  // in elements of `type`, from the start of the slice
    std::vector<std::uint64_t> shape;
    std::vector<std::uint64_t> stride;  // in elements, one per dimension
    std::uint64_t at_byte = 0;          // the REDUCE that built it, in the pickle
};

class Objects {
public:
    const Value& operator[](Ref ref) const { return values_[ref]; }
    std::size_t size() const { return values_.size(); }

    std::string_view text(const Value& value) const { return texts_[value.index]; }
    std::span<const Ref> items(const Value& value) const { return items_[value.index]; }
    const std::vector<StorageRecord>& storages() const { return storages_; }
    const std::vector<StorageSlice>& slices() const { return slices_; }
    const TensorRecord& tensor(const Value& value) const { return tensors_[value.index]; }

private:
    friend class Machine;

    std::vector<Value> values_;
    std::vector<std::string> texts_;
    std::vector<std::vector<Ref>> items_;
    std::vector<StorageRecord> storages_;
    std::vector<StorageSlice> slices_;
    std::vector<TensorRecord> tensors_;
};

}  // namespace tensorfs::pickle
