// Where the tensors of a PyTorch checkpoint sit in its unpickled object, as dotted names: a state dict gives its
// keys ("layer.weight"), nested dicts join their keys ("model.layer.weight", "optimizer.state.0.exp_avg"), lists
// and tuples give indices. Values that are not tensors (numbers, strings, bools, None, short lists of those)
// become metadata under the same names.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pickle_objects.hpp"

namespace tensorfs::pytorch {

struct NamedTensor {
    std::string name;
    const pickle::TensorRecord* tensor;
};

struct NamedObjects {
    std::vector<NamedTensor> tensors;  // in the order of the object
    nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
};

// The object cannot be named: a key that is not text or a number, two tensors of the same name, nesting too deep.
class NamingError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Walks the object from `root` (without recursion; a container that holds itself ends at the depth limit).
// `root_name` names a root that is not a dict or a list (torch.save(tensor)): the file's name without extension.
NamedObjects name_objects(const pickle::Objects& objects, pickle::Ref root, const std::string& root_name);

}  // namespace tensorfs::pytorch
