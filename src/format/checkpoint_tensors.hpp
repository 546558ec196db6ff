// The tensors of a PyTorch checkpoint as the catalog serves them: each one a slice of the file, where its
// storage lies. A tensor contiguous in C order is served as its own bytes; any other view (a transposed or
// sliced tensor, an expanded one) is served as the bytes its elements span, with its strides, and its values are
// gathered in C order when they are decoded. Tensors that share a storage (tied weights) share its bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint_names.hpp"
#include "tensorfs/catalog.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs::pytorch {

// Where the bytes of one storage lie in the file.
struct StoragePlace {
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;  // its element count times its element size
};

// The catalog's tensors for `named`, checked against their storages (`places`, by index of
// Objects::storages()). A tensor that breaks a rule is a problem naming `file`, at the byte of the pickle that
// built it (the pickle starts at byte `pickle_offset` of the file), and is left out.
std::vector<Tensor> place_tensors(const pickle::Objects& objects, const std::vector<NamedTensor>& named,
                                  const std::vector<StoragePlace>& places, const std::string& file,
                                  std::uint64_t pickle_offset, Problems& problems);

}  // namespace tensorfs::pytorch
