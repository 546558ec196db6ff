// device= of safe_open and load, taken as safetensors takes it, and checked when the handle is made rather than at
// the first tensor.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "array_plan.hpp"

namespace tensorfs::python {

// The device as torch names it ("cpu", "cuda:0", "mps"), from what safetensors accepts: "cpu", "cuda", "cuda:N",
// an int N (cuda:N), the other accelerators torch knows by safetensors' names (mps, xpu:N, npu:N, hpu, ...), and
// also a torch.device. Raises TypeError for another kind of value; ValueError for a name that is no device, and for
// any device but the CPU with numpy; RuntimeError for a device this torch cannot use (CUDA on a machine without it),
// as torch does, with torch's reason.
std::string device_named(const pybind11::handle& device, Framework framework);

}  // namespace tensorfs::python
