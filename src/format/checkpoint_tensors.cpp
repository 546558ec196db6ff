#include "checkpoint_tensors.hpp"

#include <optional>

#include "safetensors_json.hpp"

namespace tensorfs::pytorch {
namespace {

std::string dims_text(const std::vector<std::uint64_t>& dims) {
    std::string text = "(";
    for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
    return text + (dims.size() == 1 ? ",)" : ")");
}

// PyTorch's is_contiguous: strides of C order, where dimensions of size 1 may have any stride.
bool is_c_contiguous(const std::vector<std::uint64_t>& shape, const std::vector<std::uint64_t>& stride) {
    std::uint64_t expected = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
        if (shape[i] != 1 && stride[i] != expected) return false;
        expected *= shape[i];  // cannot wrap: the caller checked that the elements fit in 64 bits
    }
    return true;
}

class Placer {
public:
    Placer(const pickle::Objects& objects, const std::vector<StoragePlace>& places, const std::string& file,
           std::uint64_t pickle_offset, Problems& problems)
        : objects_(objects), places_(places), file_(file), pickle_offset_(pickle_offset), problems_(problems) {}

    std::optional<Tensor> place(const NamedTensor& named) {
        const pickle::TensorRecord& record = *named.tensor;
        const pickle::StorageSlice& slice = objects_.slices()[record.slice];
        const pickle::StorageRecord& storage = objects_.storages()[slice.storage];
        const StoragePlace& place = places_[slice.storage];
        name_ = &named.name;
        at_ = pickle_offset_ + record.at_byte;

        Tensor tensor;
        tensor.name = named.name;
        tensor.type = record.type;
        tensor.shape = record.shape;
        const std::uint64_t element = record.type->block_bytes;
        const std::uint64_t storage_element = storage.type->block_bytes;
        // The slice of the storage the tensor is built on (all of it but for legacy views), in bytes.
        const std::uint64_t slice_start = slice.first * storage_element;  // within the storage: cannot wrap
        const std::uint64_t slice_bytes = slice.count * storage_element;

        std::uint64_t elements = 1;
        for (const std::uint64_t dim : record.shape) {
            if (__builtin_mul_overflow(elements, dim, &elements)) {
                return refuse("size " + dims_text(record.shape) + " has more than 2^64 elements");
            }
        }
        tensor.elements = elements;
        std::uint64_t start = 0;  // bytes from the slice's start to the tensor's first element
        if (__builtin_mul_overflow(record.storage_offset, element, &start)) {
            return refuse("storage offset " + std::to_string(record.storage_offset) + " overflows 64 bits");
        }
        if (elements == 0) {
            // No bytes: any place inside the storage will do.
            tensor.offset = place.offset + slice_start + std::min(start, slice_bytes);
            return tensor;
        }
        // The last element's index: storage_offset + sum of (size - 1) * stride.
        std::uint64_t last = record.storage_offset;
        for (std::size_t i = 0; i < record.shape.size(); ++i) {
            std::uint64_t reach = 0;
            if (__builtin_mul_overflow(record.shape[i] - 1, record.stride[i], &reach) ||
                __builtin_add_overflow(last, reach, &last)) {
                return refuse("size " + dims_text(record.shape) + " with stride " + dims_text(record.stride) +
                              " reaches past element 2^64 of its storage");
            }
        }
        std::uint64_t end = 0;  // bytes from the slice's start to the end of the last element
        if (__builtin_add_overflow(last, 1, &end) || __builtin_mul_overflow(end, element, &end) || end > slice_bytes) {
            return refuse("size " + dims_text(record.shape) + ", stride " + dims_text(record.stride) +
                          " and storage offset " + std::to_string(record.storage_offset) + " reach element " +
                          std::to_string(last) + " of storage " + storage.key + ", which holds " +
                          std::to_string(slice_bytes / element) + " elements of " + std::string(record.type->name));
        }
        tensor.offset = place.offset + slice_start + start;
        if (is_c_contiguous(record.shape, record.stride)) {
            tensor.nbytes = elements * element;
        } else {
            tensor.nbytes = end - start;
            tensor.raw_in_c_order = false;
            tensor.stride = record.stride;
            tensor.storage_offset = slice.first * storage_element / element + record.storage_offset;
        }
        return tensor;
    }

private:
    std::nullopt_t refuse(const std::string& what) {
        problems_.add(file_, "tensor " + safetensors::json_quoted(*name_) + ": " + what, at_);
        return std::nullopt;
    }

    const pickle::Objects& objects_;
    const std::vector<StoragePlace>& places_;
    const std::string& file_;
    std::uint64_t pickle_offset_;
    Problems& problems_;
    const std::string* name_ = nullptr;
    std::uint64_t at_ = 0;
};

}  // namespace

std::vector<Tensor> place_tensors(const pickle::Objects& objects, const std::vector<NamedTensor>& named,
                                  const std::vector<StoragePlace>& places, const std::string& file,
                                  std::uint64_t pickle_offset, Problems& problems) {
    Placer placer(objects, places, file, pickle_offset, problems);
    std::vector<Tensor> tensors;
    tensors.reserve(named.size());
    for (const NamedTensor& one : named) {
        if (auto tensor = placer.place(one)) tensors.push_back(std::move(*tensor));
    }
    return tensors;
}

}  // namespace tensorfs::pytorch
