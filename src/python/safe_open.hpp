// The object tensorfs.safe_open returns, and the one its get_slice returns: safetensors' safe_open and
// PySafeSlice, for any SOURCE. A closed handle raises ValueError, as a closed file does.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <pybind11/pybind11.h>

#include "tensorfs/engine.hpp"
#include "tensor_reader.hpp"

namespace tensorfs::python {

class SafeOpen {
public:
    SafeOpen(std::shared_ptr<const Engine> model, Framework framework, std::optional<ValueView> dtype,
             std::string device);

    // The names sorted, as safetensors gives them; offset_keys() in the order of their bytes in the files (GGUF,
    // PyTorch: the order of the file's own list).
    pybind11::list keys() const;
    pybind11::list offset_keys() const;
    pybind11::dict metadata() const;
    pybind11::object get_tensor(const pybind11::handle& name) const;
    pybind11::bytes raw(const pybind11::handle& name) const;
    pybind11::list files() const;
    void close();
    std::string repr() const;

    // The opened model (ValueError when closed) and the index of the tensor `name` (KeyError when unknown, with the
    // name it most likely means).
    std::shared_ptr<const Engine> model() const;
    std::uint32_t index_of(const Engine& model, const pybind11::handle& name) const;
    // A reader for this handle's framework, dtype and device.
    TensorReader reader() const;

private:
    mutable std::mutex mutex_;
    std::shared_ptr<const Engine> model_;   // nullptr once closed
    Framework framework_;
    std::optional<ValueView> dtype_;
    std::string device_;
};

// get_slice(name): the tensor's shape and dtype, and `[key]` to read a part of it.
class Slice {
public:
    Slice(pybind11::object handle, std::uint32_t tensor);

    pybind11::list get_shape() const;
    // The dtype of what [...] and get_tensor return for the handle's framework and dtype, in safetensors' spelling.
    std::string get_dtype() const;
    pybind11::object getitem(const pybind11::handle& key) const;

private:
    const SafeOpen& handle() const { return handle_.cast<const SafeOpen&>(); }

    pybind11::object handle_;   // the SafeOpen, kept alive: a slice of a closed handle raises ValueError
    std::uint32_t tensor_;
};

}  // namespace tensorfs::python
